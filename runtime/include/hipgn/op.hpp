// What each op is, as data: the tensors it reads and writes (required, optional, written only
// with gamma), those its vector accesses need aligned, how many x-sized tensors cross memory
// (the bandwidth floor), and which output verification compares. Validation, support checks,
// kernel parameters, the C API, the profiler, tuning and the tests read this table instead of
// asking `op == ...`; a new op is one row here (and its kernels).
#pragma once

#include <cstdint>
#include <string>

#include "hipgn/problem.hpp"

namespace hipgn {

// The tensors of Tensors, as bits.
enum TensorBit : unsigned {
  kX = 1u << 0, kY = 1u << 1, kGamma = 1u << 2, kBeta = 1u << 3, kMean = 1u << 4, kRstd = 1u << 5,
  kDy = 1u << 6, kDx = 1u << 7, kDgamma = 1u << 8, kDbeta = 1u << 9,
};
inline constexpr unsigned kTensorCount = 10;
// Their names, indexed by bit position: "x", "y", ...
const char* tensor_name(unsigned bit_index);
// The pointer of one tensor (a single bit).
const void* tensor_pointer(const Tensors&, TensorBit);
// Tensors with the bits of `keep` kept and every other pointer null.
Tensors only(const Tensors&, unsigned keep);

// A group of tensors that must all be given, and what the error says when one is null.
struct Required {
  unsigned tensors;
  const char* missing;
};

struct OpDescriptor {
  Op op;
  bool backward;          // reads the forward's mean and rstd and dy; its reference is reference_bwd
  Required required[5];   // in the order they are checked; unused entries have tensors 0
  unsigned reads;         // inputs, required or not
  unsigned writes;        // outputs written on every call
  unsigned optional_writes;  // outputs written only where given (fwd: the statistics)
  unsigned writes_with_gamma;  // outputs written exactly when gamma is given (affine on)
  const char* with_gamma_missing;  // the error when gamma is given but one of those is null
  const char* without_gamma_given;  // the error when gamma is null but one of those is given
  bool activation_needs_gamma;  // a fused activation's derivative is taken at gamma * xhat + beta
  unsigned aligned;       // the x-sized tensors a vector access reads or writes
  int x_sized_tensors;    // x-sized tensors read or written once: the bandwidth floor
  TensorBit checked;      // the output verification compares with the reference
};

// The row of an op.
const OpDescriptor& describe(Op);

// "x, dy or dx": the tensors of a mask, for messages.
std::string tensor_list(unsigned mask);

}  // namespace hipgn
