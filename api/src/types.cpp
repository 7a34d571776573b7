// Names of the enumerations: the spellings of codegen/spec.py.
#include "hipgn/types.hpp"

namespace hipgn {
namespace {
template <typename E, std::size_t K>
bool parse_in(std::string_view s, E& out, const std::string_view (&names)[K]) {
  for (std::size_t i = 0; i < K; ++i)
    if (names[i] == s) { out = static_cast<E>(i); return true; }
  return false;
}
constexpr std::string_view kOps[] = {"fwd", "dx", "dgb", "bwd"};
constexpr std::string_view kDtypes[] = {"f32", "f16", "bf16"};
constexpr std::string_view kLayouts[] = {"cf", "cl"};
constexpr std::string_view kActs[] = {"none", "swish"};
constexpr std::string_view kFamilies[] = {"onchip", "looped", "split", "resident"};
}  // namespace

std::string_view to_string(Op v) { return kOps[int(v)]; }
std::string_view to_string(DataType v) { return kDtypes[int(v)]; }
std::string_view to_string(Layout v) { return kLayouts[int(v)]; }
std::string_view to_string(Activation v) { return kActs[int(v)]; }
std::string_view to_string(Family v) { return kFamilies[int(v)]; }
bool parse(std::string_view s, Op& v) { return parse_in(s, v, kOps); }
bool parse(std::string_view s, DataType& v) { return parse_in(s, v, kDtypes); }
bool parse(std::string_view s, Layout& v) { return parse_in(s, v, kLayouts); }
bool parse(std::string_view s, Activation& v) { return parse_in(s, v, kActs); }
bool parse(std::string_view s, Family& v) { return parse_in(s, v, kFamilies); }
std::size_t size_of(DataType t) { return t == DataType::f32 ? 4 : 2; }

}  // namespace hipgn
