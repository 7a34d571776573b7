// The HIP API subset hipgn uses, mapped onto the CUDA runtime. Only what the library, tests,
// profiler and examples call is here; add a name when code needs it, never a whole header.
#pragma once

#include <cuda_runtime_api.h>

#define HIPGN_PLATFORM_NVIDIA 1

using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipMemcpyKind = cudaMemcpyKind;
using hipFuncAttribute = cudaFuncAttribute;
using hipFuncAttributes = cudaFuncAttributes;
using hipDeviceAttribute_t = cudaDeviceAttr;

inline constexpr hipError_t hipSuccess = cudaSuccess;
inline constexpr hipError_t hipErrorInvalidValue = cudaErrorInvalidValue;
inline constexpr hipError_t hipErrorNoDevice = cudaErrorNoDevice;
inline constexpr hipFuncAttribute hipFuncAttributeMaxDynamicSharedMemorySize = cudaFuncAttributeMaxDynamicSharedMemorySize;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMultiprocessorCount = cudaDevAttrMultiProcessorCount;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeCooperativeLaunch = cudaDevAttrCooperativeLaunch;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxSharedMemoryPerMultiprocessor =
    cudaDevAttrMaxSharedMemoryPerMultiprocessor;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeL2CacheSize = cudaDevAttrL2CacheSize;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeSharedMemPerBlockOptin = cudaDevAttrMaxSharedMemoryPerBlockOptin;
inline constexpr hipMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr hipMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr hipMemcpyKind hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;

inline hipError_t hipGetDeviceCount(int* n) { return cudaGetDeviceCount(n); }
inline hipError_t hipGetDevice(int* d) { return cudaGetDevice(d); }
inline hipError_t hipSetDevice(int d) { return cudaSetDevice(d); }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) { return cudaGetDeviceProperties(p, d); }
inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }
inline hipError_t hipGetLastError() { return cudaGetLastError(); }
inline hipError_t hipPeekAtLastError() { return cudaPeekAtLastError(); }
inline const char* hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }
inline hipError_t hipMalloc(void** p, size_t n) { return cudaMalloc(p, n); }
template <typename T> inline hipError_t hipMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
inline hipError_t hipFree(void* p) { return cudaFree(p); }
inline hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total) { return cudaMemGetInfo(free_bytes, total); }
inline hipError_t hipMemcpy(void* d, const void* s, size_t n, hipMemcpyKind k) { return cudaMemcpy(d, s, n, k); }
inline hipError_t hipMemcpyAsync(void* d, const void* s, size_t n, hipMemcpyKind k, hipStream_t st) { return cudaMemcpyAsync(d, s, n, k, st); }
inline hipError_t hipMemset(void* d, int v, size_t n) { return cudaMemset(d, v, n); }
inline hipError_t hipMemsetAsync(void* d, int v, size_t n, hipStream_t st) { return cudaMemsetAsync(d, v, n, st); }
inline hipError_t hipStreamCreate(hipStream_t* s) { return cudaStreamCreate(s); }
inline constexpr unsigned hipStreamNonBlocking = cudaStreamNonBlocking;
inline hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned flags) { return cudaStreamCreateWithFlags(s, flags); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
using hipStreamCaptureStatus = cudaStreamCaptureStatus;
using hipStreamCaptureMode = cudaStreamCaptureMode;
inline constexpr hipStreamCaptureStatus hipStreamCaptureStatusNone = cudaStreamCaptureStatusNone;
inline constexpr hipStreamCaptureMode hipStreamCaptureModeRelaxed = cudaStreamCaptureModeRelaxed;
inline hipError_t hipStreamGetCaptureInfo(hipStream_t s, hipStreamCaptureStatus* c, unsigned long long* id) {
  return cudaStreamGetCaptureInfo(s, c, id);
}
inline hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode* m) { return cudaThreadExchangeStreamCaptureMode(m); }
inline hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t a, int d) { return cudaDeviceGetAttribute(v, a, d); }
// Kernels are passed as function pointers (HIP's spelling); CUDA's templates take them as-is.
inline hipError_t hipFuncSetAttribute(const void* f, hipFuncAttribute a, int v) { return cudaFuncSetAttribute(f, a, v); }
inline hipError_t hipFuncGetAttributes(hipFuncAttributes* a, const void* f) { return cudaFuncGetAttributes(a, f); }
inline hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* f, int block, size_t smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, f, block, smem);
}
inline hipError_t hipLaunchCooperativeKernel(const void* f, dim3 grid, dim3 block, void** args, unsigned smem,
                                             hipStream_t s) {
  return cudaLaunchCooperativeKernel(f, grid, block, args, smem, s);
}
inline hipError_t hipEventCreate(hipEvent_t* e) { return cudaEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr) { return cudaEventRecord(e, s); }
inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) { return cudaEventElapsedTime(ms, a, b); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
// HIP's cross-lane operations act on the whole wavefront; CUDA spells them with a lane mask.
// (Below sm_70 and in the host pass CUDA still declares its own deprecated maskless ones.)
__device__ __forceinline__ float __shfl_xor(float v, int lane_mask, int width = warpSize) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
}
__device__ __forceinline__ float __shfl(float v, int src_lane, int width = warpSize) {
  return __shfl_sync(0xffffffffu, v, src_lane, width);
}
#endif
