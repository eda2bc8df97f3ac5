// The system's zlib, for the core's decoding of gzip and deflate response bodies
// (Sources/SwiftConnect/Transport/Engine/ContentDecoding.swift).
#ifndef CSWIFTCONNECT_ZLIB_SHIM_H
#define CSWIFTCONNECT_ZLIB_SHIM_H

#include <zlib.h>

// `inflateInit2` is a macro, which Swift does not import.
static inline int CSwiftConnectZlib_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

// `deflateInit2` is a macro too: the tests encode with it.
static inline int CSwiftConnectZlib_deflateInit2(z_streamp stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}

#endif
