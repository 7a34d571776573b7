// The vocabulary of the public API: ops, dtypes, layouts, activations and kernel families,
// with their short names (those of instance names). Nothing here needs the GPU runtime.
#pragma once

#include <cstddef>
#include <string_view>

namespace hipgn {

// fwd: y (and saved mean/rstd); dx: backward data; dgb: backward gamma/beta; bwd: the fused
// backward, dx with dgamma and dbeta from one call.
enum class Op : int { fwd = 0, dx = 1, dgb = 2, bwd = 3 };
enum class DataType : int { f32 = 0, f16 = 1, bf16 = 2 };
enum class Layout : int { channels_first = 0, channels_last = 1 };
enum class Activation : int { none = 0, swish = 1 };
// Kernel families; see kernels/include/hipgn/kernels/groupnorm_fwd.hpp.
enum class Family : int { onchip = 0, looped = 1, split = 2, resident = 3 };

// Short names: the same spellings as codegen/spec.py's tables, used in instance names.
std::string_view to_string(Op);
std::string_view to_string(DataType);
std::string_view to_string(Layout);
std::string_view to_string(Activation);
std::string_view to_string(Family);
bool parse(std::string_view, Op&);
bool parse(std::string_view, DataType&);
bool parse(std::string_view, Layout&);
bool parse(std::string_view, Activation&);
bool parse(std::string_view, Family&);
std::size_t size_of(DataType);

}  // namespace hipgn
