// The one launcher idiom: a kernel family is a header under families/ that defines its kernels
// and specializes FamilyLauncher for its Family, whose launch<Traits> starts the kernels of the
// instance's op and layout on a stream. launch.hpp includes every family's header and hands a
// generated instance (templates/instance.inc.j2) its family's launch; the family's descriptor
// (codegen/families.py) says what the runtime may ask of it. A new family is its header, its
// include in launch.hpp and its descriptor.
#pragma once

#include "hipgn/params.hpp"
#include "hipgn/platform.hpp"

namespace hipgn::kernels {

template <Family F>
struct FamilyLauncher;

}  // namespace hipgn::kernels
