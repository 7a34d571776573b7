// What each kernel family is, as data (generated from codegen/families.py: family_table.cpp):
// which ops it has kernels for, its capacity and support constraints, its launch shape and the
// heuristic's tie-break among its instances. The runtime reads this table instead of switching
// on the family; a new family is a row there, its kernels and its launcher.
#pragma once

#include "hipgn/types.hpp"

namespace hipgn {

struct FamilyDescriptor {
  Family family;
  unsigned ops;         // bit 1 << int(op) for each op it has kernels for
  bool holds_group;     // capacity: the group must fit on chip (block * vector * per_thread elements)
  bool splits_group;    // several workgroups per group, partials through the workspace (<= 65535)
  bool persistent;      // a co-resident grid of slices (Instance::resident_shape)
  int generic_vector;   // the vector at which an instance runs every valid problem (0: none)
  int chunk_order;      // tie-break within a vector: -1 smallest chunk first, +1 largest, 0 own rule
  const char* why;      // the tie-break's reason
  unsigned backward_layouts;  // bit 1 << int(layout) for each layout its backward ops have kernels for
  unsigned layouts;           // bit 1 << int(layout) for each layout it has kernels for (every op)
  bool streams;               // two passes over x in one cooperative launch (Instance::stream_shape)
  bool uneven_groups;         // runs opt-in uneven groups (Problem::uneven_groups)
  bool gamma_beta_arrivals;   // backward: dgamma/dbeta by the last of a group's samples (Instance::counter_bytes)
  bool peels_forward;         // channels-first forward: peels runs as the backward does (Params::span)
  bool rows_channels_last;    // channels-last: a group as rows, block / columns at once (onchip_cl_rows)
  bool columns_channels_last;  // channels-last: groups narrower than the vector, V channels a workgroup
};

const FamilyDescriptor& describe(Family);

}  // namespace hipgn
