/*
 * bcryptprimitives.dll for wine 8.0 (Debian 12), which lacks it. Rust's standard library
 * (1.78 and later) imports ProcessPrng from it on Windows, so no Rust-built Windows binary
 * loads under wine 8.0 without it; wine 9.0 and Windows 10+ ship it. `npm run test:targets`
 * compiles this with mingw-w64 into its own wine prefix before running the Windows build
 * there. ProcessPrng fills the buffer from the system's cryptographic generator, here
 * RtlGenRandom (SystemFunction036), as wine 9's own implementation does.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
    if (!SystemFunction036(data, chunk)) return FALSE;
    data += chunk;
    length -= chunk;
  }
  return TRUE;
}
