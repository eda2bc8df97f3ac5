print("SwiftConnect Playground")
