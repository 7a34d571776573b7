// Dispatch rules: data first, then the short function that reads them.
#include "hipgn/heuristics.hpp"
#include "hipgn/clusters.hpp"
#include "hipgn/op.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace hipgn {

namespace {

// A target's rule tables: one list per op kind. Thresholds in groups per compute unit scale with
// the device's own count (DeviceInfo::cus()); the others are the measured part's.
struct RuleTables {
  std::string_view measured_on;  // the arch the measurements behind the thresholds ran on
  std::vector<Rule> forward;     // fwd
  std::vector<Rule> backward;    // dx, dgb, bwd
};

constexpr double kAny = std::numeric_limits<double>::infinity();
// The forward's "small tensor", in bytes of x a compute unit (below): the channels-last rules
// and the channels-first split rule.
constexpr double kSmallBytesPerCu = 96 << 10;
// The channels-last forward's "tiny tensor", in bytes of x a compute unit (below).
constexpr double kTinyBytesPerCu = 8 << 10;
// The channels-last forward's resident family below this many bytes of x a compute unit (below).
constexpr double kResidentClFwdBytesPerCu = 48 << 10;
// The channels-last forward's onchip family in parts below this many bytes of x a compute unit
// (below).
constexpr double kOnchipPartsClFwdBytesPerCu = 72 << 10;
// ... and of 16-bit groups whose C/G channels span 16-byte multiples of at least this many bytes
// below this many bytes of x a compute unit (below).
constexpr double kOnchipPartsClFwdWideBytesPerCu = 160 << 10;
constexpr int kOnchipPartsClFwdWideRunBytes = 32;
// ... by instances of at most this many elements a workgroup: of 1024 threads (32768) none was
// within 15% of the fastest past 72 KB (H200, fp16, bench.py --best, 2026-11-30: sd15_64x640
// 1024 x 4 x 8 21.6 us against 256 x 4 x 8's 17.0, sdxl_32x2560 18.8 against 16.1, vae_128x512
// 30.9 against 20.5), so where a device's clusters cannot hold a group in smaller parts (a
// portable cluster's 8) the later rules take it.
constexpr std::int64_t kOnchipPartsClFwdMostChunkElements = 16384;
// The channels-last onchip backward's groups past 32K elements in parts below this many bytes
// of x a compute unit, where C/G spans at least this many bytes, two 16-byte vectors (below);
// groups of narrower runs that one workgroup holds are spread in parts over half the compute
// units (better()).
constexpr double kOnchipPartsClBwdBytesPerCu = 60 << 10;
constexpr int kOnchipPartsClBwdRunBytes = 32;
// The channels-last onchip backward below this many groups a compute unit for any group one
// workgroup holds; from it for groups of at most this many elements whose C/G channels span at
// least this many bytes, 4-byte vectors and the fewest threads first (below; better()).
constexpr double kOnchipClBwdFewGroupsPerCu = 2.0;
constexpr std::int64_t kOnchipClBwdManyGroupsMostElements = 4096;
constexpr int kOnchipClBwdManyGroupsRunBytes = 128;
// The channels-last onchip forward's groups in parts: from this many elements, parts enough
// that the workgroups cover half the compute units before the fewest parts (better()).
constexpr std::int64_t kOnchipPartsSpreadFromElements = 16384;
// The onchip forward's (and channels-last backward's) most threads a workgroup where fewer hold
// the group too (better()).
constexpr int kOnchipMostThreads = 512;
// The channels-last onchip forward's 8-byte vectors before 16-byte ones from groups of this
// many elements, after 16-byte and 4-byte ones below it (better()).
constexpr std::int64_t kOnchipClFwdEightByteFromElements = 4096;
// The channels-last onchip forward's instances of at most this many values a thread first, for
// groups that may be held in parts (better()).
constexpr int kOnchipClFwdPartValues = 16;
// The channels-last onchip forward's preferences for groups in parts (16 values a thread, slots
// loaded at once but for 16-byte vectors) hold for instances of at most this many threads: of
// 512, four slots at once lost wherever the group was in parts (better()).
constexpr int kOnchipClFwdPartThreads = 256;
// The channels-first onchip forward of 16-bit values in parts up to groups of this many (below).
constexpr std::int64_t kOnchipCfFwdPartsMaxElements = std::int64_t(1) << 18;
// The channels-first onchip forward's parts nearest this many bytes of x first (better()):
// 4096 16-bit elements, 2048 fp32 ones.
constexpr std::int64_t kOnchipCfFwdPartBytes = 8192;
// The onchip forward's 16-bit parts past a portable cluster only where a portable cluster a
// group would fill at most this share of the compute units (better()): channels-last 16 groups
// on 132 won, 32 lost (between, unmeasured); channels-first 2 won, 32 and 64 lost or tied.
constexpr double kOnchipFwdWidePartsBelowCuShare = 1.0;
// The rounds of clusters better() counts leave out a last round of at most this share of the
// clusters the device runs at once: 2 of 62 (3%) cost little, 6 of 58 (10%) a fifth of the time
// (better()).
constexpr double kOnchipLastRoundUncountedShare = 1.0 / 16;
// The channels-last onchip backward's 4-byte vectors before 16-byte ones from groups of this
// many elements (better()).
constexpr std::int64_t kOnchipClBwdFourByteFromElements = 8192;
// ... but first, where two instances' workgroups in parts both fill less than this share of the
// compute units, the more workgroups (better()). The share from bench.py --shape probes of
// 65536-element groups, 256 x 8 x 4 in 8 against 512 x 2 x 16 in 4 (H200, fp16 / bf16 SiLU,
// L2-cold, 2026-12-03): 8 groups (64 workgroups against 32) 8.54 / 8.15 us against 9.02 / 9.05;
// 16 groups (128 against 64, past half) level, 9.87 / 9.37 against 9.77 / 9.74 (bench/NOTES.md,
// "Few workgroups in parts").
constexpr double kOnchipClBwdFewWorkgroupsCuShare = 0.5;
// The split forward from groups of this many elements, channels-first, any of them below this
// many bytes of x a compute unit (below) ...
constexpr std::int64_t kSplitCfFwdGroupElements = 61440;
constexpr double kSplitCfFwdBytesPerCu = 72 << 10;
// ... and from there to kSmallBytesPerCu, groups of at most this many elements (below).
constexpr std::int64_t kSplitCfFwdLargeMostGroupElements = 131072;
// ... where from kStreamCfFwdBytesPerCu the onchip forward takes them first in parts of at most
// this many elements a workgroup (below).
constexpr std::int64_t kOnchipCfFwdLargeGroupPartElements = 8192;
// The channels-first onchip forward in parts of this many elements, held as loaded where that
// runs more of their clusters at once (256 x 8 x 8: families/onchip.hpp, kOnchipHeldBits): few
// large groups of peeled runs, and groups of up to two such parts, from kStreamCfFwdBytesPerCu
// (below).
constexpr std::int64_t kOnchipCfFwdHeldPartElements = 16384;
// ... the latter up to this many bytes of x a compute unit: just past the one row measured.
constexpr double kOnchipCfFwdTwoPartsBytesPerCu = 384 << 10;
// The channels-first onchip forward of 16-bit groups in two parts of this many elements (512 x
// 8 x 8), from kStreamCfFwdBytesPerCu up to kOnchipCfFwdTwoLargePartsBytesPerCu: two such parts'
// 64 KB a workgroup, the two workgroups a compute unit its kernel runs at once, one round of
// clusters (below).
constexpr std::int64_t kOnchipCfFwdLargePartElements = 32768;
constexpr double kOnchipCfFwdTwoLargePartsBytesPerCu = 128 << 10;
// The channels-first onchip forward's 16-bit groups that two parts of this many slots hold, at
// least kOnchipCfFwdPairFillEighths full, before the parts nearest 8 KB (better()).
constexpr std::int64_t kOnchipCfFwdPairPartSlots = 8192;
constexpr std::int64_t kOnchipCfFwdPairFillEighths = 7;
// The split forward's slices below this many elements go first below kTinyBytesPerCu of x a
// compute unit, last from it (better()).
constexpr std::int64_t kSplitFwdSmallSliceElements = 4096;
// The split forward's slices of this many elements or more go first where they make from
// kSplitFwdCoarseFromSlicesPerCu up to kSplitFwdCoarseBelowSlicesPerCu workgroups a compute
// unit, last elsewhere (better()).
constexpr std::int64_t kSplitFwdCoarseSliceElements = 8192;
constexpr double kSplitFwdCoarseFromSlicesPerCu = 1.5;
constexpr double kSplitFwdCoarseBelowSlicesPerCu = 4.0;
// The channels-last split forward where a group's C/G channels span at least this many bytes
// (below).
constexpr int kSplitClFwdRunBytes = 32;
// The channels-first resident family's slices a group (a cluster's workgroups on sm_90) up to
// which an instance goes first, where it makes an item a compute unit (better_resident): the
// portable cluster size.
constexpr std::int64_t kResidentCfPortableSlices = 8;
// The channels-first forward's stream family from this many bytes of x a compute unit (below),
// and up to which its instance of one 512-thread workgroup a compute unit (per_thread 2) wins.
constexpr double kStreamCfFwdBytesPerCu = 60 << 10;
constexpr double kStreamCfFwdOneGroupBytesPerCu = 140 << 10;
// The channels-first onchip forward of few large groups in parts below this many bytes of x a
// compute unit (below).
constexpr double kOnchipCfFwdLargeGroupsBytesPerCu = 120 << 10;
// Below this many bytes of x a compute unit, the channels-last backward splits few groups at
// any C; from it, the stream family takes them (below).
constexpr double kSplitClBwdBytesPerCu = 8 << 10;
// ... and few groups from C = 1024 of 16-byte vectors below this many (below).
constexpr double kSplitClBwdWideBytesPerCu = 48 << 10;
// From this many bytes of x a compute unit, the channels-first backward takes the onchip family
// where it holds the group and splits every other group (below).
constexpr double kSplitCfBwdBytesPerCu = 32 << 10;
// Below that, the channels-first backward splits groups of more than this many elements (below).
constexpr std::int64_t kSplitCfBwdGroupElements = 2304;

// Measured on an H100 SXM (sm_90, 132 SMs); the targets that have no measurements of their own
// read these too, as codegen/vocabulary.py declares (Target.rules).
RuleTables sm_90() {
  std::vector<Rule> forward = {
      // Channels-last groups of up to 16K elements: one workgroup per group, which holds it in
      // registers, beats the resident family's per-sample exchange. Measured on an H100, fp16
      // SiLU, L2-cold (bench/NOTES.md, "resident, first measurements"): SD 16x16 C=1280
      // (10240-element groups) onchip 7.8 us against resident 50 us; ResNet 7x7 C=2048 (3136)
      // 11.4 against 25; but ResNet 56x56 C=256 (25088) resident 105 against onchip 134.
      // Not where C/G leaves it vectors under 8 bytes (sd15_32x320, C/G = 10, 4-byte vectors:
      // onchip 11.0 us, the resident family's whole-row vectors 9.3; bench/NOTES.md,
      // "Chunks of a sample").
      // Groups narrower than a vector take a workgroup a column of V channels (fwd_onchip_columns;
      // the tie-break below): instance_norm_32x64, C/G = 1, 256 x 8 of 2-channel columns 6.15 /
      // 6.19 us fp16 / bf16 where the looped family took 9.8 / 9.8 (H100, L2-cold, the same
      // process; torch.compile 7.5 / 6.7 in bench/results).
      Rule{Family::onchip, kAny, 0, "channels-last groups of up to 16K elements: a workgroup per group", 16384,
           Rule::kChannelsLast}
          .vector_bytes(8),
      // Channels-last, larger groups. Measured on an H100, fp16 SiLU, L2-cold, every instance
      // (bench/NOTES.md, "The stream family"; bench/results/stream_cl/). The stream family
      // (stream_fwd.hpp) pays 10-12 us of fixed latency (two grid barriers, a merge), so
      // below ~96 KB of x a compute unit (12.7 MB on 132) the older families win where they
      // can: a workgroup per group of up to 32K elements, whatever its vector since the onchip
      // forward walks a group's rows (fwd_onchip_rows; bench/NOTES.md, "The channels-last onchip
      // forward by rows": 4-byte vectors, sd15_16x1920 onchip 6.8 us against resident 11.1;
      // sd15_32x960 10.5 against 13.3; sd15_32x640 9.3 against 10.7; odd_31x31_c640 8.9 against
      // 10.7; sd15_32x320 7.9 against 9.2; sd15_16x640 5.3 against 8.7 and looped 12.2; 16-byte,
      // sd15_16x2560 8.5 against stream 22.9) ...
      Rule{Family::onchip, kAny, 0, "channels-last, a small tensor: a workgroup per group of up to 32K elements (from 8K elements, a thread-block cluster of parts where they fill their slots more)",
           32768, Rule::kChannelsLast}
          .bytes_per_cu(0, kSmallBytesPerCu),
      // ... and past 32K elements, below 72 KB of x a compute unit, a thread-block cluster a
      // group where the device has them and C/G takes 8-byte vectors or wider: the onchip
      // forward in parts (fwd_onchip_parts_kernel, Instance::onchip_parts; H100, fp16 SiLU,
      // L2-cold, bench.py --best, 2026-11-28; bench/NOTES.md, "A group in parts"):
      // sd15_32x1920 (58 KB) 13.6 us against stream 19.6, sd15_32x1280 10.2 against split 12.5,
      // vae_64x512 9.0-10.5 against split 12.2, g16_32x640 7.3-8.1 against split 8.9,
      // det_25x42x2048 (64 KB) 16.2 against 16.5; not sdxl_32x2560 (78 KB: 18.3-20.6 against
      // split 18.3), nor C/G of 4-byte vectors (sd15_64x320, C/G = 10: 15.7 against resident
      // 14.0) ...
      Rule{Family::onchip, kAny, 0, "channels-last, a small tensor of large groups: a thread-block cluster a group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kOnchipPartsClFwdBytesPerCu)
          .vector_bytes(8),
      // ... and on to 96 KB for 16-bit values where C/G's channels take 8-byte vectors or wider:
      // on the H200 the H100's exception above turned round (fp16 / bf16 SiLU, L2-cold, bench.py
      // --best, 2026-11-29, bench/results/h200): sdxl_32x2560 (78 KB, C/G = 80) onchip 256 x 8 x 4
      // in 11 parts 16.3 / 16.2 us against split 17.3-18.8 / 17.7-17.8; and since the parts
      // kernel that holds its rows as loaded (fa36957; 2026-11-30, bench/NOTES.md, "The
      // channels-last onchip forward's rows held as loaded") C/G of 8-byte vectors too
      // (sd15_64x640, 78 KB, C/G = 20: 256 x 4 x 8 17.0 / 17.8 against stream 18.8 / 18.7) ...
      Rule{Family::onchip, kAny, 0, "channels-last, a small tensor of large 16-bit groups: a thread-block cluster a group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(kOnchipPartsClFwdBytesPerCu, kSmallBytesPerCu)
          .vector_bytes(8)
          .chunks_of_at_most(kOnchipPartsClFwdMostChunkElements)
          .only({DataType::f16, DataType::bf16}),
      // ... and on to 160 KB where C/G's channels are 32 bytes or more of 16-byte vectors, since
      // that kernel (256 x 8 x 8 in parts at 79 registers a thread, one round of clusters;
      // 2026-11-30, bench/results/h200, fp16 / bf16): vae_128x512 (124 KB, C/G = 16) 20.5 / 21.1
      // us against stream 22.6 / 22.8; det_50x84x1024 (127 KB, 32) 19.8 / 20.8 against 23.7 /
      // 23.7; sdxl_64x1280 (155 KB, 40) 25.2 / 26.6 against 26.6 / 26.9; odd_61x67_c1280 (155
      // KB, 40) 25.5 / 26.3 against 26.5 / 26.8. Not 16-byte runs (odd_1d_8191_c256, 124 KB,
      // C/G = 8: 27.6 / 27.7 against stream 21.6 / 21.9), nor past 160 KB, where the groups no
      // longer fit the registers at once (det_100x168x512, 254 KB, C/G = 16: 71.9 / 70.4
      // against 34.1 / 34.3), nor 4-byte vectors (sd15_64x960, 116 KB: 24.4 against 22.5) ...
      Rule{Family::onchip, kAny, 0, "channels-last, a tensor of large groups of 32-byte or wider 16-byte runs: a thread-block cluster a group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(kSmallBytesPerCu, kOnchipPartsClFwdWideBytesPerCu)
          .group_runs(16)
          .runs_from(kOnchipPartsClFwdWideRunBytes)
          .chunks_of_at_most(kOnchipPartsClFwdMostChunkElements)
          .only({DataType::f16, DataType::bf16}),
      // ... and fp32 groups of up to 64K elements with 8-byte vectors or wider, whatever the
      // tensor's size, as the channels-first fp32 rule below: the stream family, sized on
      // 16-bit values, lost to the onchip one on both such fp32 rows of the suite (H200, SiLU,
      // L2-cold, bench.py --best, 2026-11-28, bench/results/h200): sd15_64x320 (40960 elements,
      // 10 MB) 256 x 2 x 8 in parts 15.43 us against stream 17.02, r50_56x256_n32 (25088, 103
      // MB) 256 x 4 x 8 in parts 77.23 against 87.22 (torch.compile 87.0) ...
      Rule{Family::onchip, kAny, 0, "channels-last fp32, groups of up to 64K elements: a workgroup or a thread-block cluster a group",
           65536, Rule::kChannelsLast}
          .vector_bytes(8)
          .only({DataType::f32}),
      // ... and past 32K elements, few groups whose C/G channels are 32 bytes or more of 16-byte
      // vectors: the split family's two launches, the second reading x from L2 (since its
      // batches load at once and sum over registers: bench/NOTES.md, "The split forward's
      // chain"; H100, fp16 / bf16 SiLU, L2-cold, bench.py --best, 2026-11-27): sd15_32x1280 (80
      // bytes) 12.7 / 12.8 us against resident 13.6 / 13.8, sdxl_32x2560 (160) 18.8 / 19.7
      // against 22.8 / 23.3, det_25x42x2048 (128) 18.2 / 18.6 against 19.9 / 20.1, g16_32x640
      // (80) 9.8 / 10.1 against 11.1 / 11.1, layer_norm_32x64 (128) 7.2 / 7.3 against 8.1 / 8.2;
      // and 32-byte runs (vae_64x512, C/G = 16: 256 x 4 12.15 / 12.37 against resident 12.88 /
      // 12.91; 12.07 / 12.42 against 12.71 / 12.91 in another run of 2026-11-27, ninth session;
      // 12.1-13.0 against 12.6-12.8 over three runs before the split forward's batches) ...
      Rule{Family::split, 1.0, 0, "channels-last, a small tensor of few large groups, runs of 32 bytes or more: several workgroups per group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kSmallBytesPerCu)
          .vector_bytes(16)
          .runs_from(kSplitClFwdRunBytes)
          .only({DataType::f16, DataType::bf16}),
      // ... and from 8 KB to 48 KB a compute unit (1 to 6.3 MB on 132) the resident family,
      // whose unit is a chunk of whole groups of a sample cut into slices that one thread-block
      // cluster exchanges (resident_fwd.hpp; bench/NOTES.md, "Chunks of a sample"): x read once
      // in whole-row 16-byte vectors whatever C/G is (sd15_64x320 15.8 us against stream 21.0;
      // sd15_32x1280 14.9 against split 16.6; vae_64x512 13.8 against 15.3; g16_32x640 11.2
      // against 13.7); past 48 KB only with 16-byte vectors (below) ...
      Rule{Family::resident, kAny, 0, "channels-last, a small tensor: chunks of groups exchanged within a cluster",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(kTinyBytesPerCu, kResidentClFwdBytesPerCu),
      // ... and resident for the groups too large for it, not split (layer_norm_32x64, G = 1,
      // 65536 elements: resident 256 x 2 7.9 us against split 10.5; bench/NOTES.md, "The held
      // stream"); not smaller groups (instance_norm_32x64, C/G = 1: the onchip columns 6.2,
      // looped 9.8, resident 10.6) ...
      Rule{Family::resident, kAny, 32768, "channels-last, a tiny tensor of large groups: chunks exchanged within a cluster",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kTinyBytesPerCu),
      // ... and on to 96 KB where a group's C/G channels take 16-byte vectors, where the split
      // family took them before and now loses to the resident one's 256 x 8 (bench.py --best,
      // H100, fp16 / bf16, L2-cold, 2026-11-26: det_25x42x2048, 64 KB, 19.5 / 19.9 us against
      // split 20.0 / 20.2; sdxl_32x2560, 78 KB, 22.6 / 22.7 against 24.1 / 24.2; the A/B
      // against the rule before, 0.91-0.93 and 0.99-1.02); not other C/G, where the stream
      // family wins (the same A/B with this rule at any C/G: sd15_64x640, C/G = 20, resident
      // 24.1 us against stream 21.0; odd_127x127_c320 26.9 against 20.2; sd15_32x1920, C/G =
      // 60, 20.3 against 19.6) ...
      Rule{Family::resident, kAny, 0, "channels-last, a small tensor of 16-byte groups: chunks of groups exchanged within a cluster",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(kResidentClFwdBytesPerCu, kSmallBytesPerCu)
          .group_runs(16),
      // ... and below 8 KB a compute unit (1 MB on 132) the onchip family whatever its vector:
      // groups past 32K elements of 4-byte vectors, which the rules above leave, in parts
      // (bench.py --best --shape, H200, fp16 SiLU, L2-cold, 2026-12-03; bench/NOTES.md, "What
      // the heuristic sent off the suite"): 1 x 30 x 4096 at G = 1 onchip 512 x 2 x 16 6.35 us
      // against the looped family's 130.9 that took it; 2 x 20 x 4096 at G = 2 256 x 2 x 8 4.77
      // against 44.3; 1 x 2 x 100 x 168 at G = 1 4.13 against 34.8; eight such shapes, 7-20x ...
      Rule{Family::onchip, kAny, 0, "channels-last, a tiny tensor: a workgroup or a thread-block cluster a group, any vector",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kTinyBytesPerCu),
      // ... and where C/G neither takes a vector nor divides one (C/G = 3, 5: the onchip rows
      // need a multiple of the vector, its columns a divisor), a workgroup per group looping
      // over it beats the stream family's fixed cost (instance_norm_32x64, C/G = 1, before the
      // onchip columns: looped 9.5 us, stream 15.4).
      Rule{Family::looped, kAny, 0, "channels-last, a tiny tensor: a workgroup per group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kTinyBytesPerCu),
      // Otherwise two streaming passes: 31-61% of copy on the channels-last shapes from 3 MB
      // up (sdxl_128x320 97.7 -> 37.5 us, vae_512x256 442 -> 162, video_5d 5.6x faster). On
      // tiny tensors its fixed cost is most of the time, but it still beats the resident
      // family there (instance_norm_32x64, C/G = 1: stream 15.5 us, resident 24.0; the onchip
      // columns and the looped family take such tensors first).
      {Family::stream, kAny, 0, "channels-last: two streaming passes, the second from L2",
       std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast},
      // Channels-first below 60 KB a compute unit, groups of up to 4096 elements with 16-byte
      // vectors: a workgroup per group holding it, no exchange (measured on an H100, fp16 SiLU,
      // L2-cold, every instance: tiny, 256 elements, onchip 2.4 us against resident 3.9;
      // instance_norm_32x64, 1024: 3.3 against 4.5; sd15_8x1280, 2560: 4.3 against 4.7),
      // whatever the spatial size (the onchip forward peels it: det_7x11x256, 616 elements, 2.9
      // against 4.7; r50_7x2048_n32, 1024 groups of 3136, 10.5 against 16.6; bench/NOTES.md,
      // "The onchip forward, peeled") ...
      Rule{Family::onchip, kAny, 0, "channels-first, a small tensor, groups of up to 4096 elements: a workgroup per group",
           4096, Rule::kChannelsFirst}
          .bytes_per_cu(0, kStreamCfFwdBytesPerCu)
          .vector_bytes(16),
      // ... and with 16-bit values up to the onchip family's 32K (fp32 unmeasured past 4096). At
      // 5120 elements the two were within a few percent until the onchip forward's prologue
      // (bench/NOTES.md, "The small channels-first forward's prologue"); now sd15_16x640 and
      // sd15_8x2560, fp16 / bf16, onchip 256 x 8 x 4 4.48 / 4.52 and 4.51 / 4.54 us against
      // resident 5.18 / 5.22 and 5.17 / 5.23 (bench.py --best, 2026-11-27). Past 8192, fp16
      // 512 x 8 x 8 against the resident family's best, sd15_32x320 (10240 elements) 5.75 us
      // against 6.31, sd15_16x1280 5.86 / 6.21, odd_31x31_c640 (19220) 8.02 / 8.61, sd15_32x640
      // (20480) 7.81 / 8.76, sd15_16x2560 8.54 / 8.70, odd_3d_7x31x37_c120_cg3 (24087) 9.05 /
      // 9.77, odd_97x89_c96_cg3 (25899) 9.51 / 9.74, sd15_32x960 (30720) 10.00 / 10.50, but
      // sd15_16x1920 (15360) 7.09 / 6.99 (bench.py --best, 2026-11-27; since gamma and beta went
      // once a vector, 0.89-0.96x the time: bench/NOTES.md, "gamma and beta once a vector"). bf16
      // since its slots widen after all their loads (kOnchipWidenAfterLoads; before, its 16-byte
      // onchip lost there): 512 x 8 x 8 against the resident family's best, sd15_16x1280 5.8 /
      // 6.4, sd15_16x1920 6.9 / 7.1, sd15_32x640 7.3 / 8.7, sd15_32x960 9.4 / 10.1,
      // odd_31x31_c640 7.8 / 8.6, odd_97x89 8.9 / 9.6, odd_3d 8.9 / 10.0 (2026-11-27, fourth
      // session; bench/NOTES.md, "bf16's loads in rounds") ...
      Rule{Family::onchip, kAny, 0, "channels-first, a small tensor of 16-bit values, groups of up to 32K elements: a workgroup per group (from 8K elements, a thread-block cluster of parts where they fill their slots more)",
           32768, Rule::kChannelsFirst}
          .bytes_per_cu(0, kStreamCfFwdBytesPerCu)
          .vector_bytes(16)
          .only({DataType::f16, DataType::bf16}),
      // ... and with 16-bit values up to 64K elements a thread-block cluster a group where the
      // device has them: the onchip forward in parts
      // (fwd_onchip_parts_kernel, Instance::onchip_parts; H100, fp16 / bf16 SiLU, L2-cold,
      // bench.py --best, 2026-11-28; bench/NOTES.md, "A group in parts"): sd15_64x320 (40960
      // elements) 9.0 / 9.2 us against resident 10.9 / 10.9, sd15_32x1280 9.0 / 8.9 against 10.9
      // / 10.8, g16_32x640 7.1 / 7.2 against 8.4 / 8.4, vae_64x512 (65536) 8.5 / 8.5 against split
      // 9.7 / 10.0; sd15_32x1920 (61440) 13.7 / 13.7 in 8 parts against split 13.6 / 13.9. Past
      // 64K up to what 16 parts hold (odd_97x89_c160_g8, 16 groups of 172660, 5.5 MB: 256 x 8 x 8
      // in 11 parts 10.5 / 11.6 us against resident 12.8 / 12.9; H200, bench.py --best,
      // bench/NOTES.md, "Sixteen parts"), not past 60 KB a compute unit (sd15_64x640, 81920
      // elements, 10 MB: 18.2 against split 16.1 on the H100 in 8 parts; there parts of 8K only,
      // below). Below 8 KB a compute unit too since clusters of 16 hold a group of 64K in parts
      // of 4096 (layer_norm_32x64, 2 groups:
      // 256 x 8 x 2 in 16 parts 3.93 us against split 5.34; H200, fp16 SiLU, L2-cold, bench.py
      // --best, bench/NOTES.md, "Sixteen parts"; in 8 parts it had tied split, 5.4 / 5.4 against
      // 5.4 / 5.3) ...
      Rule{Family::onchip, kAny, 0, "channels-first, a small tensor of 16-bit values, groups of up to 256K elements: a thread-block cluster a group",
           kOnchipCfFwdPartsMaxElements, Rule::kChannelsFirst}
          .bytes_per_cu(0, kStreamCfFwdBytesPerCu)
          .vector_bytes(16)
          .only({DataType::f16, DataType::bf16}),
      // ... and fp32 groups of up to 64K elements, whatever the tensor's size: a workgroup or a
      // cluster a group, where the other families, measured on 16-bit values and sized in bytes,
      // lost to it on every fp32 row with such groups (H200, SiLU, L2-cold, bench.py --best,
      // 2026-11-28; bench/NOTES.md, "Sixteen parts"): sd15_16x1280 (10240 elements, 2.6 MB)
      // 256 x 4 x 2 in parts 5.01 us against resident 7.11, sd15_64x320 (40960, 10 MB) 1024 x 4 x
      // 8 11.47 against stream 15.10, r50_56x256_n32 (1024 groups of 25088, 103 MB) 256 x 4 x 8
      // 63.71 against stream 87.76 (torch.compile 86.05); tiny (256) onchip already ...
      Rule{Family::onchip, kAny, 0, "channels-first fp32, groups of up to 64K elements: a workgroup or a thread-block cluster a group",
           65536, Rule::kChannelsFirst}
          .vector_bytes(16)
          .only({DataType::f32}),
      // ... and groups of up to 4096 elements of narrower runs (a spatial size of 2, say) the
      // onchip family whatever its vector (bench.py --best --shape, H200, fp16 SiLU, L2-cold,
      // 2026-12-03; bench/NOTES.md, "What the heuristic sent off the suite"): spatial size 2,
      // 1 x 32 at G = 16 to 32 x 30 at G = 1, onchip 256 x 2 x 4 1.65-1.74 us against the looped
      // family's 2.63-2.72 that took them; 8 x 320 at G = 64 2.92 against 3.26; 32 x 1920 at
      // G = 64 7.75 against 7.87 ...
      Rule{Family::onchip, kAny, 0, "channels-first, a small tensor, groups of up to 4096 elements of narrow runs: a workgroup per group",
           4096, Rule::kChannelsFirst}
          .bytes_per_cu(0, kStreamCfFwdBytesPerCu),
      // ... and groups of fewer than 64 elements that it does not take, a workgroup per group
      // looping over them (hw1_512, 16 elements, spatial 1: looped 3.2 us against resident 4.8,
      // before a spatial size of 1 ran as channels-last).
      Rule{Family::looped, kAny, 0, "channels-first, a small tensor, groups below 64 elements: a workgroup per group",
           63, Rule::kChannelsFirst}
          .bytes_per_cu(0, kStreamCfFwdBytesPerCu),
      // Channels-first, few groups of 60K elements or more from 60 KB to 120 KB of x a compute unit
      // (the split rule's problems past the small tensors' onchip rules), runs of 16-byte vectors:
      // the onchip forward's instances of up to 8K elements a workgroup, in parts (where a
      // cluster holds them; the fewer rounds of clusters that better() puts first would take 16K
      // parts here, 1.09x slower), x read once in one launch, before the split family's second
      // read from L2. H200, fp16 / bf16 SiLU, L2-cold, bench.py --best, one
      // process (bench/NOTES.md, "Few large groups in parts of 8K"): sd15_64x640 and sdxl_32x2560
      // (64 groups of 81920) 256 x 8 x 4 in 10 parts 14.41 / 14.42 and 14.26 / 14.48 us against
      // split 128 x 8 x 4's 15.25 / 15.54 and 15.25 / 15.59; not parts of 16K, all a portable
      // cluster's 8 allows there (HIPGN_CLUSTERS=portable: 256 x 8 x 8 in 5 16.03 / 16.16 and
      // 16.14 / 15.89 against 15.61 / 15.94 and 15.70 / 16.06), nor rows that peel (det_25x42x2048,
      // 65 KB: 256 x 8 x 4 in 9 16.26 / 16.12 against stream 15.24 / 15.83). Up to 120 KB since
      // the stream forward's eviction hints (H200, bench.py --best, 2026-11-30, thirty-first
      // session; bench/NOTES.md, "The heuristic after the eviction hints"): sd15_64x960 (116 KB,
      // 64 groups of 122880 in 15 parts) 256 x 8 x 4 18.94 / 19.14 us against stream 19.33 /
      // 20.25; not odd_1d_8191_c256 (124 KB, 64 groups of 65528 in 8) 21.05 / 23.42 against
      // stream 20.34 / 21.48; the groups of vae_128x512 and det_50x84x1024 (124-127 KB) take more
      // than 16 such parts.
      Rule{Family::onchip, 1.0, kSplitCfFwdGroupElements, "channels-first, few large 16-bit groups, 60-120 KB a compute unit: a thread-block cluster a group, in parts of up to 8K elements",
           kOnchipCfFwdPartsMaxElements, Rule::kChannelsFirst}
          .bytes_per_cu(kStreamCfFwdBytesPerCu, kOnchipCfFwdLargeGroupsBytesPerCu)
          .vector_bytes(16)
          .group_runs(16)
          .chunks_of_at_most(kOnchipCfFwdLargeGroupPartElements)
          .only({DataType::f16, DataType::bf16}),
      // ... and those whose runs peel (a spatial size the vector does not divide), up to a
      // portable cluster's 8 parts: in parts of 16K elements, 256 x 8 x 8, whose vectors held as
      // loaded (kOnchipHeldBits) run a launch's clusters in one round where the plain kernel's
      // took two. H200, fp16 / bf16 SiLU, L2-cold, bench.py --best, 2026-12-02, forty-third
      // session (bench/NOTES.md, "The channels-first onchip forward's parts held as loaded"):
      // det_25x42x2048 (64 groups of 67200, 65 KB) in 5 parts 12.62 / 12.62 us against stream
      // 14.85 / 14.99 and 256 x 8 x 4 in 9 15.64 / 15.64 (with the peers: 12.88 / 12.59 against
      // the kept 15.09 / 14.96). Not 10 parts (odd_127x127_c320, 32 groups of 161290, 76 KB:
      // 16.06 / 15.96 against stream 16.23 / 16.29, and 16.10 / 17.09 against 16.05 / 16.21 with
      // the peers), nor past 120 KB (odd_1d_8191_c256, 124 KB: 20.80 / 20.72 against 20.35 /
      // 20.41; there 512 x 8 x 8 in 2 parts 18.53 / 18.48, unruled).
      Rule{Family::onchip, 1.0, kSplitCfFwdGroupElements, "channels-first, few large 16-bit groups of peeled runs, 60-120 KB a compute unit: a thread-block cluster a group, in up to 8 parts of 16K elements",
           kClusterPortable * kOnchipCfFwdHeldPartElements, Rule::kChannelsFirst}
          .bytes_per_cu(kStreamCfFwdBytesPerCu, kOnchipCfFwdLargeGroupsBytesPerCu)
          .vector_bytes(16)
          .chunks_of(kOnchipCfFwdHeldPartElements)
          .only({DataType::f16, DataType::bf16}),
      // Channels-first, few groups of 60K elements or more from 8 KB to 96 KB of x a compute
      // unit (1 to 12.7 MB on 132; from 60 KB those the rule above leaves), 16-byte vectors: the
      // split family's two launches, the second reading x from L2 (since its batches load at
      // once and sum over registers: bench/NOTES.md, "The split forward's chain"; H100, fp16 /
      // bf16 SiLU, L2-cold, bench.py --best,
      // 2026-11-27): vae_64x512 (65536 elements) 9.8 / 10.1 us against resident 10.7 / 10.8,
      // sd15_32x1920 (61440) 13.8 / 14.1 against 14.3 / 14.2, sd15_64x640 (81920) 17.1 / 17.4
      // against stream 18.1 / 18.8, sdxl_32x2560 17.1 / 17.3 against 17.8 / 18.8; not groups of
      // 40960 (sd15_64x320 12.6 / 13.0 against resident 11.0 / 11.0, sd15_32x1280 12.7 / 12.9
      // against 11.4 / 11.2, g16_32x640 8.9 / 9.1 against 8.7 / 8.7), nor larger tensors
      // (sd15_64x960, 15.7 MB, 23.4 / 23.9 against stream 22.7 / 23.6; vae_128x512 24.2 / 24.1
      // against 22.8 / 23.7); below 8 KB a compute unit with 1024-element slices (layer_norm_32x64,
      // 2 groups, 0.3 MB: 128 x 1 5.5 us against resident 6.2; bench/NOTES.md, "Small slices
      // for the split forward"). From 72 KB only groups of up to 128K elements, since the
      // stream forward's eviction hints (H200, fp16 / bf16 SiLU, L2-cold, bench.py --best): there
      // sd15_64x640 and sdxl_32x2560 (64 groups of 81920, 78 KB; bench/results/h200) split 1.23
      // of the fastest (onchip, in parts) against stream 1.27-1.28, but off the suite (bench.py
      // --shape, fp16, 2026-12-03; bench/NOTES.md, "What the heuristic sent off the suite") 4 x
      // 80 x 152 x 104 at G = 4 (16 groups of 316160, 75 KB) stream 15.56 us against split 16.35;
      // 4 x 20 x 200 x 336 at G = 1 (80 KB) 15.96 against 17.66; 32 x 12 x 100 x 168 at G = 1
      // (201600 elements, 95 KB) 17.57 against 18.60; below 72 KB split led on all five such
      // shapes timed (2 x 8 x 512 x 512 at G = 1, 62 KB, 13.39 against stream 14.20; 1.02-1.12x).
      Rule{Family::split, 1.0, kSplitCfFwdGroupElements, "channels-first, a small tensor of few large groups: several workgroups per group, the second pass from L2",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsFirst}
          .bytes_per_cu(0, kSplitCfFwdBytesPerCu)
          .vector_bytes(16)
          .only({DataType::f16, DataType::bf16}),
      Rule{Family::split, 1.0, kSplitCfFwdGroupElements, "channels-first, a small tensor of few groups of up to 128K elements: several workgroups per group, the second pass from L2",
           kSplitCfFwdLargeMostGroupElements, Rule::kChannelsFirst}
          .bytes_per_cu(kSplitCfFwdBytesPerCu, kSmallBytesPerCu)
          .vector_bytes(16)
          .only({DataType::f16, DataType::bf16}),
      // Channels-first from 60 KB of x a compute unit (7.9 MB on 132). Measured on an H100,
      // fp16 SiLU, L2-cold, every instance (bench/NOTES.md, "The stream forward,
      // channels-first"): the stream family (stream_fwd_cf.hpp) reads each workgroup's share
      // of x once, keeping up to ~190 KB of it in shared memory for the second pass and the
      // rest in L2, and pays ~10 us of fixed latency (a grid barrier, the merges): it beats the
      // resident family from det_25x42x2048 (8.6 MB: 19.0 us against 26.1) up (sdxl_128x640
      // 48.3 against 63.3, vae_512x256 150.9 against 192.2, r50_56x256_n32 59.6 against 60.4),
      // and loses below (sd15_32x1920, 7.9 MB: 18.0 against 16.5; r50_7x2048_n32 21.0 against
      // 16.3; sd15_64x320 15.8 against 14.0).
      // ... but groups of 16-byte runs that two parts of 16K elements hold (256 x 8 x 8, its
      // vectors held as loaded where that runs more clusters at once), up to 384 KB: x read once.
      // H200, fp16 / bf16 SiLU, L2-cold, bench.py --best, 2026-12-02, forty-third session
      // (bench/NOTES.md, "The channels-first onchip forward's parts held as loaded"):
      // r50_56x256_n32 (1024 groups of 25088, 49 MB, 380 KB) 41.41 / 42.18 us against stream
      // 512 x 8 x 1's 44.91 / 45.49 and 256 x 8 x 4 in 4 parts 44.11 / 43.68 (with the peers:
      // 41.34 / 44.08 against the kept 47.07 / 46.62); the suite's one such row.
      Rule{Family::onchip, kAny, kOnchipCfFwdHeldPartElements + 1, "channels-first, 16-bit groups of two 16K-element parts, 60-384 KB a compute unit: a thread-block cluster a group",
           2 * kOnchipCfFwdHeldPartElements, Rule::kChannelsFirst}
          .bytes_per_cu(kStreamCfFwdBytesPerCu, kOnchipCfFwdTwoPartsBytesPerCu)
          .vector_bytes(16)
          .group_runs(16)
          .chunks_of(kOnchipCfFwdHeldPartElements)
          .only({DataType::f16, DataType::bf16}),
      // ... and groups that two parts of 32K elements hold (512 x 8 x 8), up to 128 KB a compute
      // unit, where the device runs every group's cluster at once: x read once. H200, fp16 / bf16
      // SiLU, L2-cold, bench.py --best, 2026-12-02, forty-fourth session (bench/NOTES.md, "Two
      // rounds, fewer in the second"): odd_1d_8191_c256 (128 groups of 65528, peeled, 16.8 MB,
      // 124 KB; 132 clusters of 2 at once) 18.64 / 18.58 us against stream 512 x 8 x 2's 20.21 /
      // 20.48 (the forty-third session 18.53 / 18.48 against 20.35 / 20.41); the suite's one such
      // row.
      Rule{Family::onchip, kAny, 2 * kOnchipCfFwdHeldPartElements + 1, "channels-first, 16-bit groups of two 32K-element parts, 60-128 KB a compute unit: a thread-block cluster a group",
           2 * kOnchipCfFwdLargePartElements, Rule::kChannelsFirst}
          .bytes_per_cu(kStreamCfFwdBytesPerCu, kOnchipCfFwdTwoLargePartsBytesPerCu)
          .vector_bytes(16)
          .chunks_of(kOnchipCfFwdLargePartElements)
          .only({DataType::f16, DataType::bf16}),
      Rule{Family::stream, kAny, 0, "channels-first from 60 KB a compute unit: x read once into shared memory and L2",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsFirst}
          .bytes_per_cu(kStreamCfFwdBytesPerCu, kAny),
      // x crosses memory once in and y once out at 16 bytes an access, on any shape the
      // family supports (resident_fwd.hpp); the other families read x twice or narrowly. The
      // fastest channels-first instance on every suite shape measured.
      {Family::resident, kAny, 0, "resident: x read once, 16-byte accesses, statistics exchanged on chip"},
      // Fewer groups than compute units: one workgroup per group leaves most of them idle
      // (Stable Diffusion at N=2, G=32 is 64 groups on 132 SMs). Below 16K elements a group
      // is a few waves of loads and splitting it costs more (a second launch, partials) than
      // the idle units lose.
      {Family::split, 1.0, 16384, "fewer groups than compute units: several workgroups per group"},
      // The group fits in registers: x is read once, the floor of 2 passes over memory.
      {Family::onchip, kAny, 0, "the group fits on chip: x read once"},
      // Anything else loops over the group, reading x twice.
      {Family::looped, kAny, 0, "the group loops: x read twice"},
  };
  std::vector<Rule> backward = {
      // Channels-last, few groups that one workgroup holds (up to 32K elements since the
      // backward walks a group's rows, bwd_onchip_rows): a workgroup per group, x and dy read
      // once, one launch. Measured on an H100, fp16 SiLU, L2-cold, every instance (bench/NOTES.md,
      // "The channels-last onchip backward by rows"): sd15_16x640 onchip 7.9 us against split
      // 12.1; sd15_32x320 10.4 against stream 15.2; sd15_32x640 (20480 elements) 13.4 against
      // 18.6; sd15_16x2560 14.5 against split 16.1; det_13x21x256 5.8 against 7.7 (earlier,
      // resident 16.4); hw1_512 at 256 groups 5.0-5.3 against resident 7.8. Not many groups:
      // r50_7x2048_n32 (1024 groups) stream 23.6 against onchip 26.2. Groups narrower than the
      // vector take a column of V channels a workgroup (bwd_onchip_columns): instance_norm_32x64,
      // C/G = 1, 7.7 / 7.5 us fp16 / bf16 against the looped family's 12.1 / 11.9 (the same run).
      {Family::onchip, kOnchipClBwdFewGroupsPerCu, 0, "channels-last: few groups that fit on chip", 32768,
       Rule::kChannelsLast},
      // ... and however many groups, small ones of wide runs, 16-bit: since the channel sums
      // went to teams of lanes (H200, fp16 / bf16 SiLU, L2-cold, bench.py --best, 2026-12-03;
      // bench/NOTES.md, "Channel sums in teams, channels-last") r50_7x2048_n32 (1024 groups of
      // 3136, 128-byte runs) onchip 256 x 2 x 8 17.64 / 17.66 us against the stream family's
      // 20.21 / 20.50 (it was 23.70 / 23.77); not r50_56x256_n32 (16-byte runs, 25088 elements:
      // onchip 1.7x stream, kept results), and the runs between were not timed.
      Rule{Family::onchip, kAny, 0, "channels-last, many small groups of wide runs: a workgroup a group",
           kOnchipClBwdManyGroupsMostElements, Rule::kChannelsLast}
          .runs_from(kOnchipClBwdManyGroupsRunBytes)
          .only({DataType::f16, DataType::bf16}),
      // ... and past 32K elements, fewer groups than compute units whose C/G channels span 64
      // bytes or more, below 60 KB of x a compute unit: a thread-block cluster a group where
      // the device has them, the onchip backward in parts (bwd_onchip_parts_kernel,
      // Instance::onchip_parts; x and dy read once in one launch). Measured on an H100 (fp16 /
      // bf16 SiLU, L2-cold, bench.py --best, 2026-11-28; bench/NOTES.md, "The backward in
      // parts"): sd15_32x1920 (58 KB, 120-byte runs) 512 x 2 x 32 in 2 parts 21.3 / 21.6 us
      // against stream 24.4; g16_32x640 (80 bytes) 512 x 2 x 16 in 3 11.8 / 11.8 against
      // stream 16.1; sd15_32x1280 (80 bytes) 17.0 / 17.2 at best against split 19.5. Runs of
      // 32 bytes too since 512 x 2 x 32 stages dy' (72448e2; H200, fp16 / bf16, bench.py --best,
      // 2026-12-01, thirty-seventh session, bench/NOTES.md, "Runs of 32 bytes"): vae_64x512 512 x 2
      // x 32 in 2 parts 14.09 / 14.11 us against stream 16.10 / 16.40 (the device runs its 512 x 2
      // x 16 in 4 parts in two rounds of clusters, 17.0, which better()'s rounds put after it);
      // odd_97x89_c160_g8 (40 bytes) in 6 parts 17.42 / 17.36 against 18.21 / 18.63. Not
      // narrower ones (sd15_64x320, 20 bytes: stream 18.03 / 18.54, 512 x 2 x 32 in 2 20.4 /
      // 20.0), nor det_25x42x2048 (65 KB: stream 25.0, 512 x 2 x 16 in 5 29.5) or sdxl_32x2560
      // (78 KB: stream 31.8; since the staging level, 27.61 / 27.89 against 27.26 / 27.42). However few
      // the groups: layer_norm_32x64 (2 groups of 65536, 8 workgroups in all) 512 x 2 x 16 in 4
      // parts 9.21 / 9.23 us against the resident family's 9.72 / 9.87, which took it while
      // this rule asked for 0.2 groups a compute unit, unmeasured (H200, fp16 / bf16, bench.py
      // --best, the sixteenth session's instance tables; bench/NOTES.md, "Whole groups at once").
      Rule{Family::onchip, 1.0, 0, "channels-last, few large groups of wide rows: a thread-block cluster a group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kOnchipPartsClBwdBytesPerCu)
          .runs_from(kOnchipPartsClBwdRunBytes),
      // Channels-last, measured on an H100, fp16 SiLU, L2-cold, every instance (bench/NOTES.md,
      // "The stream backward"). The stream family (stream_bwd.hpp) reads x and dy twice in two
      // pure streams and pays ~15 us of fixed latency; from ~4 MB of x it beats the resident
      // family everywhere (vae_512x256 617 -> 251 us, sdxl_128x960 348 -> 135, sd15_64x320
      // 37.3 -> 26.2, r50_7x2048_n32 47.8 -> 39.1) except where few groups of 16-byte vectors
      // from C = 1024 split below 48 KB a compute unit: since the stream backward's single
      // barrier (bench/NOTES.md, "One barrier for the channels-last stream backward"; every
      // instance, fp16 / bf16) sd15_32x1280, 40 KB, split 19.5 / 19.7 us against stream 20.4 /
      // 20.0; det_25x42x2048, 65 KB, stream 25.2 / 24.9 against split 26.1 / 26.5; sdxl_32x2560,
      // 80 KB, level (stream 31.9 / 30.9, split 31.3 / 30.8). Below C = 1024 the split pass
      // has too few workgroups, N*C/V column vectors of whole samples (vae_64x512, 64 of them:
      // split 33.1 us, stream 25.5) ...
      Rule{Family::split, 1.0, 4096, "channels-last, a small tensor, C >= 1024, 16-byte vectors: several workgroups per group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kSplitClBwdWideBytesPerCu)
          .vector_bytes(16)
          .channels_from(1024),
      // ... and below 8 KB a compute unit, fewer groups than compute units whatever their runs:
      // the onchip family (a cluster a group in parts), one launch, before the split family's
      // two (bench.py --best --shape, H200, fp16 SiLU, L2-cold, 2026-12-03; bench/NOTES.md,
      // "What the heuristic sent off the suite"): 1 x 2 x 100 x 168 at G = 1 (4-byte runs)
      // onchip 512 x 2 x 16 7.44 us against split 38.25, which took it ...
      Rule{Family::onchip, 1.0, 0, "channels-last, a tiny tensor of fewer groups than compute units: a thread-block cluster a group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kSplitClBwdBytesPerCu),
      // ... and, below 8 KB a compute unit (1 MB on 132), at any C and vector: there the
      // resident family's per-sample exchange and the stream family's grid barrier cost
      // more than the split family's second launch (measured on an H100, fp16 SiLU, L2-cold,
      // every instance, bench/results of 2026-11-26: sd15_16x640, 5 KB, C/G = 20: split 12.1 us
      // against stream 15.3 and resident 15.6), but not with a handful of groups, each split
      // into many slices (layer_norm_32x64, 2 groups: split 14.0, resident 13.0) ...
      Rule{Family::split, 1.0, 4096, "channels-last, a small tensor, few groups: several workgroups per group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast, std::numeric_limits<std::int64_t>::max(),
           0.2}
          .bytes_per_cu(0, kSplitClBwdBytesPerCu),
      // ... and below 8 KB a compute unit, groups of up to 4096 elements of 16-byte vectors (or
      // narrower than one: columns of V channels) the onchip family, a workgroup a group or a
      // column (the same census): 32 x 256 x 8 x 8 at G = 64 onchip 128 x 8 x 1 9.78 us against
      // the looped family's 23.84 that took it; 32 x 128 x 8 x 8 at G = 16 6.10 against 9.25; 8 x
      // 256 x 5 x 5 at G = 64 6.58 against 8.53 ...
      Rule{Family::onchip, kAny, 0, "channels-last, a tiny tensor, groups of up to 4096 elements of 16-byte vectors: a workgroup a group or a column", 4096,
           Rule::kChannelsLast}
          .bytes_per_cu(0, kTinyBytesPerCu)
          .vector_bytes(16),
      // ... and below 8 KB a compute unit, groups of at most 64 elements (a spatial size of 1,
      // say): the resident family's whole rows of C, x and dy read once (the same census): 32 x
      // 192 x 1 at G = 16 resident 256 x 8 x 2 5.68 us against looped 16.75 (onchip 8.46); 32 x
      // 480 x 1 x 1 at G = 16 6.47 against 27.61 (onchip 8.54); 8 x 128 x 1 at G = 64 5.22
      // against 6.21; 32 x 128 x 5 x 5 at G = 64 7.45 against 17.77 (onchip 7.60) ...
      Rule{Family::resident, kAny, 0, "channels-last, a tiny tensor of groups of at most 64 elements: whole rows, x and dy read once", 64,
           Rule::kChannelsLast, 1023}
          .bytes_per_cu(0, kTinyBytesPerCu),
      // ... and the onchip family's narrower vectors (8 x 3840 x 1 at G = 64, C/G = 60: 256 x 2 x
      // 8 8.80 us against resident 13.45, looped 43.57) ...
      Rule{Family::onchip, kAny, 0, "channels-last, a tiny tensor, groups of up to 4096 elements: a workgroup a group", 4096,
           Rule::kChannelsLast}
          .bytes_per_cu(0, kTinyBytesPerCu),
      // ... and groups of up to 4096 elements that neither takes (C/G takes no vector and is not
      // below one, say C/G = 3): a workgroup per group looping over it (instance_norm_32x64, C/G
      // = 1, before the onchip columns took it: looped 12.9 us against resident 15.5 and stream
      // 17.4; not larger groups: layer_norm_32x64, 2 groups of 65536, looped 69.1, resident 13.0) ...
      Rule{Family::looped, kAny, 0, "channels-last, a tiny tensor, small groups: a workgroup per group", 4096,
           Rule::kChannelsLast}
          .bytes_per_cu(0, kTinyBytesPerCu),
      // ... and the same few large groups from 8 KB a compute unit: since its barriers need no
      // memset (bench/NOTES.md, "Barriers without a memset") the stream family is within 2% of
      // the best there and up to 1.3x ahead of the resident family from 24 KB (the same run:
      // sd15_32x320, 10 KB: stream 15.7, split 16.5, resident 16.7; sd15_16x1920, 15 KB: 18.6,
      // split 19.6; odd_31x31_c640, 19 KB: 19.8, split 19.6; g16_32x640, 20 KB: 19.4, split
      // 19.0; sd15_32x640: 19.8, split 20.6; odd_97x89_c96_cg3, 25 KB: 19.7, resident 20.8;
      // odd_3d_7x31x37_c120_cg3, 29 KB: 20.5, resident 22.4; sd15_32x960, 30 KB: 21.2, resident
      // 27.4; vae_64x512, 32 KB: 21.9, resident 26.8), however few the groups (odd_1d_8191_c128_g1,
      // one group of 1M elements, 16 KB: stream 13.9 / 15.1 us against the resident family's
      // 34.5 / 34.9 as dispatched and 15.5 / 15.5 at best; H200, fp16 / bf16, bench.py --best,
      // bench/NOTES.md, "Sixteen parts") ...
      Rule{Family::stream, 1.0, 4096, "channels-last, few large groups from 8 KB a compute unit: two streaming passes",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(kSplitClBwdBytesPerCu, kAny),
      // ... and any groups from 32 KB a compute unit (4.2 MB on 132), and below it those the
      // rules above leave: the resident family took them until timed off the suite (bench.py
      // --best --shape, H200, fp16 SiLU, L2-cold, 2026-12-03; bench/NOTES.md, "What the
      // heuristic sent off the suite"), where the stream family was within 1.13 of the fastest
      // on all eight shapes and the resident family 1.05-1.52 (32 x 64 x 25 x 42 at G = 64, 32
      // KB: stream 512 x 8 x 1 16.76 us against resident 25.49 at best, 28.80 as dispatched; 1 x
      // 80 x 4096 at G = 16, 5 KB: 10.54 against 13.32; 1 x 40 x 31 x 31 at G = 8: 8.40 against
      // 8.85).
      Rule{Family::stream, kAny, 0, "channels-last: two streaming passes, the second from L2",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast},
      // Where it cannot (C not a multiple of its vector), fewer groups than compute units below
      // 60 KB a compute unit: the onchip family, a thread-block cluster a group in parts whatever
      // its runs, before the split family's two launches (the same census: 3 x 4 x 256 x 256 at
      // G = 1, 12 KB, onchip 512 x 2 x 32 12.59 us against split 155.68; 32 x 12 x 64 x 64 at G =
      // 1, 24 KB, 12.58 against 23.30).
      Rule{Family::onchip, 1.0, 0, "channels-last, fewer groups than compute units: a thread-block cluster a group",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast}
          .bytes_per_cu(0, kOnchipPartsClBwdBytesPerCu),
      // Where the stream family cannot run the shape either (the rules above take everything it
      // can), the resident family: x and dy read once at 16 bytes an access whatever C/G is
      // (resident_bwd.hpp), where the other families walk a group's columns at a stride of C.
      // Measured before the stream family (H100, 2026-11-22): vae_512x256 597 us against the
      // split family's 2068, video_5d 1287 against 5629, det_200x336x256 295 against 720. From
      // C = 1024 a few samples are cut into slices of a few rows and split wins (sdxl_32x2560
      // 99 against 43; det_50x84x1024 93 against 61), unless many groups fill the device
      // (r50_7x2048_n32, 1024 groups: resident 48.3, onchip 59.9).
      {Family::resident, kAny, 0, "channels-last, C < 1024: x and dy read once, 16-byte accesses",
       std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast, 1023},
      {Family::resident, kAny, 0, "channels-last, many groups: x and dy read once, 16-byte accesses",
       std::numeric_limits<std::int64_t>::max(), Rule::kChannelsLast, std::numeric_limits<std::int64_t>::max(), 2.0},
      // The backward's onchip instances hold at most 4096 elements (x and dy in registers,
      // per-channel sums in shared memory), so groups past that otherwise loop in one
      // workgroup. Measured on an H100, fp16 SiLU, N=2, C=1280, 16x16, G=32 (64 groups of
      // 10240): split 21.6 us against looped 79.9 us channels-first, 21.9 against 31.3 last.
      {Family::split, 1.0, 4096, "fewer groups than compute units: several workgroups per group"},
      // Channels-first from 32 KB of x a compute unit (4.2 MB on 132), groups one workgroup holds
      // (its supports() bounds them): onchip, x and dy read once, since it adds its channel sums
      // in teams of lanes (bench/NOTES.md, "Channel sums in teams"; H200, SiLU, L2-cold, every
      // instance): r50_7x2048_n32 (6.4 MB, 1024 groups of 3136, rows of 49) onchip 256 x 8 x 2
      // 18.3 / 18.8 us against split 22.3 / 22.5 (fp16 / bf16), fp32 256 x 4 x 4 29.6 against
      // 32.4 (the fused backward; dx and dgb follow, unmeasured, as every backward rule). Before
      // the teams split led there: 27.7 against 39.3 (H100, "Rows in teams"), 22.1 against 25.2
      // (H200, "The peeled onchip backward").
      Rule{Family::onchip, kAny, 0, "channels-first from 32 KB a compute unit, groups on chip: x and dy read once",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsFirst}
          .bytes_per_cu(kSplitCfBwdBytesPerCu, kAny),
      // ... and larger groups: the split family's first pass sums short rows a team of lanes each
      // (params.hpp: split_bwd_cf_rows), where looped runs a group's rows one after another in
      // one workgroup: r50_56x256_n32 (51 MB, 1024 groups of 25088) split 104.4 us against looped
      // 114.7 (H100, fp16 SiLU, L2-cold, every instance; "Rows in teams"); no suite shape between.
      Rule{Family::split, kAny, 0, "channels-first from 32 KB a compute unit: rows summed in teams or pieces",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsFirst}
          .bytes_per_cu(kSplitCfBwdBytesPerCu, kAny),
      // Below it, fewer groups than compute units: onchip's one launch wins on the smaller groups
      // and split's teams on the larger, where onchip adds more channels' rows a wavefront at a
      // time. Measured on an H100, fp16 / bf16 SiLU, L2-cold, every instance (bench/NOTES.md,
      // "Three measurements on the stream kernels' fixed costs"): sd15_8x1280 (64 groups of
      // 2560, 40 rows of 64) split 6.8 / 7.0 us against onchip 7.6 / 7.7; det_13x21x256 (64 of
      // 2184, 8 rows of 273) onchip 8.0 / 7.7 against split 9.2 / 8.7; det_7x11x256 (616)
      // onchip 6.2 / 6.0 against 7.5 / 7.4. The threshold lies between the two groups measured.
      Rule{Family::split, 1.0, kSplitCfBwdGroupElements + 1, "channels-first, few large groups: rows summed in teams",
           std::numeric_limits<std::int64_t>::max(), Rule::kChannelsFirst},
      {Family::onchip, kAny, 0, "the group fits on chip: x and dy read once"},
      // Larger groups, however many: the split family's rows summed in teams over several
      // workgroups a group, where looped runs a group in one (bench.py --best --shape, H200, fp16
      // SiLU, L2-cold, 2026-12-03; bench/NOTES.md, "What the heuristic sent off the suite"):
      // channels-first, 32 x 640 x 8 x 8 at G = 8 split 256 x 8 x 4 11.17 us against looped 102.95
      // at best; 3 x 2048 x 16 x 16 at G = 64 11.33 against 47.49; 3 x 256 x 25 x 42 at G = 64
      // 8.63 against 12.02; eight shapes, 1.03-9.2x.
      {Family::split, kAny, 0, "the group does not fit on chip: several workgroups per group"},
      {Family::looped, kAny, 0, "the group loops: x and dy read twice"},
  };
  return {"sm_90", std::move(forward), std::move(backward)};
}

// Every measured set; a target names one by its arch (Target::rules).
const std::vector<RuleTables>& measured() {
  static const std::vector<RuleTables> all = {sm_90()};
  return all;
}

}  // namespace

std::vector<std::string_view> measured_rule_targets() {
  std::vector<std::string_view> arches;
  for (const RuleTables& t : measured()) arches.push_back(t.measured_on);
  return arches;
}

const std::vector<Rule>& rules(Op op, const Target& target) {
  const RuleTables* tables = &measured().front();  // unreachable fallback: a test checks every name
  for (const RuleTables& t : measured())
    if (t.measured_on == target.rules) tables = &t;
  return describe(op).backward ? tables->backward : tables->forward;
}

namespace {
// Bytes of x a compute unit: the size against the device, which the rules and tie-breaks read.
double bytes_per_cu(const Problem& p, int cus) { return double(p.elements()) * double(size_of(p.x_dtype)) / cus; }

// Rounds in which the device runs `items` workgroups of a resident instance: a compute unit's
// register file over the workgroup's registers (about 40 a thread plus 8 a held vector, ptxas's
// report for the forward) and the device's shared memory a compute unit over the two
// bulk-copy stages, 95% of that for the clusters' packing into GPCs. cudaOccupancyMaxActiveClusters
// agreed on an H100 (256 x 4: 45 clusters of 8, 360 workgroups against 3 x 132 here; 256 x 8:
// 62 of 4, 248 against 2 x 132; 512 x 8: 66 of 2, 132 against 132).
constexpr std::int64_t kRegistersPerCu = 65536;  // sm_90's; the AMD targets read sm_90's rules
std::int64_t resident_rounds(const InstanceSpec& s, std::int64_t items, const DeviceInfo& dev) {
  const std::int64_t by_registers = kRegistersPerCu / (std::int64_t(s.block) * (40 + 8 * s.per_thread));
  const std::int64_t by_shared = dev.shared_per_cu() / (2 * std::int64_t(s.block) * s.per_thread * 16 + 1024);
  const double per_round = 0.95 * dev.cus() * double(std::max<std::int64_t>(1, std::min(by_registers, by_shared)));
  return std::int64_t(std::ceil(double(items) / per_round));
}

// Resident instances, measured on an H100 (fp16 SiLU, L2-cold; bench/NOTES.md): the
// channels-last forward, whose units are chunks of a sample, by its own order (below, first);
// the others:
//  1. a group or sample in one slice when some instance holds it: no exchange at all, and the
//     smallest that does leaves the fewest threads idle (ResNet 7x7 C=2048: 256 x 2 vectors
//     15.5 us, 512 x 8: 37 us; ResNet 56x56: 512 x 8 holds 25088, 57 us); of two that hold as
//     much, the one of more threads (SD 32x32 C=320, 10240 elements: 512 x 4 6.2 us, 256 x 8
//     7.1; SD 16x16 C=1920: 7.2 against 8.1; SD 16x16 C=640: 512 x 2 5.2 against 256 x 4 5.4);
//  2. the channels-last backward: the fewest slices (below);
//  3. channels-first: the fewest rounds of clusters (resident_rounds; the reason and the
//     measurements at its use below); then workgroups of 256 threads, two or three to a
//     compute unit, so that one's exchange overlaps another's loads (VAE 256x256 C=512:
//     256 x 8, 111.7 us, 512 x 8, 116.3); then clusters of up to 8 that make an item a compute
//     unit (the measurements at its use below), and
//     among them the largest slice that still makes 1.5 items a compute unit (SD 64x64
//     C=320: 256 x 4 with 320 items, 14.2 us, 256 x 8 with 192 (1.45 a compute unit), 14.9 us;
//     SD 32x32 C=1920: 256 x 8 with 256 (1.94) 16.6 us, 256 x 4 with 512 22.6).
bool better_resident(const Instance& a, const Instance& b, const Problem& p, const DeviceInfo& dev) {
  const int cus = dev.cus();
  const InstanceSpec &x = a.spec(), &y = b.spec();
  if (x.vector != y.vector) return x.vector > y.vector;
  const Instance::ResidentShape fa = a.resident_shape(p), fb = b.resident_shape(p);
  if (p.layout == Layout::channels_last && p.op == Op::fwd) {
    // the forward's units are chunks of a sample (Instance::resident_shape): workgroups of 256
    // (every shape its rule takes: sd15_64x320 256 x 8 15.8 us against 512 x 8 24.7), then the
    // most rows a thread whose items still cover three quarters of the compute units: fewer,
    // fuller workgroups exchange less (sd15_32x1280 256 x 8, 176 items, 13.4 against 256 x 4,
    // 352, 18.5), and 256 x 8 won at 104 items on 132 (odd_97x89_c96_cg3, 12.9 / 13.1 us fp16 /
    // bf16 against 256 x 4's 13.2 / 13.2), 120 (odd_3d_7x31x37_c120_cg3, 13.1 / 13.1 against
    // 13.9 / 13.7) and 128 (vae_64x512, 12.5 / 12.5 against 12.9 / 13.1), but lost at 88
    // (g16_32x640, 11.9 / 12.0 against 256 x 4's 176 items, 10.9 / 11.0; sd15_32x320, 10.0
    // against 256 x 2's 176, 9.3); H100, L2-cold, bench.py --best
    const bool fill_a = 4 * fa.items() >= 3 * cus, fill_b = 4 * fb.items() >= 3 * cus;
    if (fill_a != fill_b) return fill_a;
    if (fill_a) return x.per_thread > y.per_thread;
    return fa.items() > fb.items();
  }
  const bool one_a = fa.slices == 1, one_b = fb.slices == 1;
  if (one_a != one_b) return one_a;
  if (one_a) {
    if (x.chunk_elements() != y.chunk_elements()) return x.chunk_elements() < y.chunk_elements();
    return x.block > y.block;
  }
  if (p.layout == Layout::channels_last && p.op != Op::fwd && p.c <= 256 && x.block != y.block) {
    // the backward at C <= 256: two workgroups of 256 a compute unit, one's loads overlapping
    // the other's exchange, beat one of 512 with fewer slices (r50_56x256_n32 204 us against
    // 311, det_200x336x256 291 against 295, odd_3d_7x31x37_c120 22.4 against 30.0); from
    // C = 320 on the fewest slices won (sdxl_128x320, odd_127x127_c320: 512 x 4)
    return x.block == 256;
  }
  if (p.layout == Layout::channels_last) {
    // channels-last slices exchange G partials each, so the fewest slices win: SD 64x64 C=320
    // 512 x 8 (43 slices a sample) 22.1 us against 256 x 8 (86) 35.0; ResNet 56x56 C=256
    // 512 x 8 104.9 against 256 x 8 174.5. Not where they leave more than half the compute
    // units idle: there a workgroup's chain of loads, sums and exchange is the time, and more,
    // shorter ones win (layer_norm_32x64, 2 samples of 1024 rows at C = 64: 256 x 2, 32
    // workgroups, 11.7 us against 256 x 4, 16, 13.0, both dtypes; from 128 workgroups the
    // fewest slices again: sd15_32x960 512 x 4 29.2 against 512 x 2 36.6, vae_64x512 27.1
    // against 36.7; bench/results/latest.json, every instance timed, bench/heuristic_check.py)
    const bool busy_a = 2 * fa.items() >= cus, busy_b = 2 * fb.items() >= cus;
    if (busy_a != busy_b) return busy_a;
    if (!busy_a && fa.items() != fb.items()) return fa.items() > fb.items();
    if (fa.slices != fb.slices) return fa.slices < fb.slices;
    return x.block < y.block;
  }
  if (p.layout == Layout::channels_first) {
    // channels-first slices exchange within a thread-block cluster on sm_90 (primitives/cluster.hpp;
    // bench/NOTES.md, "Clusters"), and a group's clusters the device cannot hold at once wait
    // for a second round: fewer rounds first (sd15_32x1920: 512 x 8, 128 items, 14.8 us against
    // 256 x 8, 256 items on the 248 workgroups its clusters of 4 fit, 20.3); past one round the
    // fewest slices (there 512 x 8 against 256 x 4's 8 slices, 18.1)
    const std::int64_t ra = resident_rounds(x, fa.items(), dev), rb = resident_rounds(y, fb.items(), dev);
    if (ra != rb) return ra < rb;
    if (ra > 1 && fa.slices != fb.slices) return fa.slices < fb.slices;
  }
  if ((x.block == 256) != (y.block == 256)) return x.block == 256;
  // channels-first: clusters of at most kResidentCfPortableSlices where they still make an item
  // a compute unit (g16_32x640, 32 groups of 40960: 256 x 4, 5 slices, 160 items, 8.6 / 8.5 us
  // fp16 / bf16, against 256 x 2, 10 slices, 320 items, 9.3 / 9.2); past that size, every
  // channels-first row of bench/results where a smaller cluster also made an item a compute unit
  // was slower (sd15_64x640 256 x 4, 10 slices, 21.1 against 256 x 8, 5, 19.3; vae_64x512
  // 256 x 2, 16, 12.0 against 256 x 4, 8, 10.4; sd15_32x1920, sd15_64x320, sd15_32x1280,
  // sdxl_32x2560 the same way, det_25x42x2048 level)
  const bool portable_a = fa.slices <= kResidentCfPortableSlices && fa.items() >= cus,
             portable_b = fb.slices <= kResidentCfPortableSlices && fb.items() >= cus;
  if (portable_a != portable_b) return portable_a;
  const bool two_a = 2 * fa.items() >= 3 * cus, two_b = 2 * fb.items() >= 3 * cus;  // 1.5 a compute unit
  if (two_a != two_b) return two_a;
  if (x.chunk_elements() != y.chunk_elements())
    return two_a ? x.chunk_elements() > y.chunk_elements() : x.chunk_elements() < y.chunk_elements();
  return x.block < y.block;
}

// The rounds of clusters in which the device runs a launch in parts (Instance::onchip_rounds; 0
// where it does not answer) as better() counts them: a last round of at most
// kOnchipLastRoundUncountedShare of the clusters at once not counted, since such a round's few
// clusters start as the first round's end and take little of its time. H200, bf16 / fp16 SiLU,
// channels-first, L2-cold, bench.py --best, the occupancy query's answers beside them
// (bench/parts_rounds.py; bench/NOTES.md, "Two rounds, fewer in the second"): sd15_32x1920 (64
// groups) 256 x 8 x 4 in 8 parts, 62 clusters at once (the second round 2), 9.88 / 10.07 us
// against 256 x 8 x 8 in 4 (92 at once, one round) 11.96 / 11.66 and 512 x 8 x 8 in 2 (66, one)
// 11.05 / 10.73; but sd15_32x1280 (64 groups) 256 x 8 x 2 in 10 parts, fp16's 58 at once (the
// second round 6) 9.42 against bf16's 65 (one round) 7.77.
std::int64_t counted_rounds(const Instance& inst, const Problem& p, const Instance::OnchipParts& q) {
  const std::int64_t rounds = inst.onchip_rounds(p, q);
  if (rounds < 2) return rounds;
  const std::int64_t at_once = inst.onchip_at_once(p, q), last = inst.onchip_clusters(p) - (rounds - 1) * at_once;
  return double(last) <= kOnchipLastRoundUncountedShare * double(at_once) ? rounds - 1 : rounds;
}

// Whether the channels-last onchip backward's first rule leaves the problem's groups to the
// rule of many small groups of wide runs (kOnchipClBwdFewGroupsPerCu).
bool cl_bwd_many_groups(const Problem& p, int cus) { return double(p.num_groups()) >= kOnchipClBwdFewGroupsPerCu * cus; }

// Within a rule's family, is a better than b for this problem? 16-byte accesses move the most
// bytes per instruction: the widest vector that fits wins; then the family's chunk order
// (codegen/families.py): onchip the tightest fit, the fewest idle threads; split the smallest
// slices, the most workgroups in flight (measured on an H100, fp16 SiLU forward, slices of 8K
// elements beat 16K at N=2, C=320, 64x64: 21.0 against 33.3 us, and at N=1, C=512, 256x256:
// 153.9 against 188.7 us); looped the largest, the most loads in flight.
bool better(const Instance& a, const Instance& b, const Problem& p, const DeviceInfo& dev) {
  const int cus = dev.cus();
  const InstanceSpec &x = a.spec(), &y = b.spec();
  // the onchip family's parts (Instance::onchip_parts), asked once for the tie-breaks below: of
  // a group of kOnchipPartsFromElements or more, or of a channels-last column (groups narrower
  // than the instance's vector)
  const bool in_parts = x.family == Family::onchip && p.group_elements() >= kOnchipPartsFromElements;
  const bool ca = a.columns(p), cb = b.columns(p);
  const Instance::OnchipParts pa = in_parts || ca ? a.onchip_parts(p) : Instance::OnchipParts{},
                              pb = in_parts || cb ? b.onchip_parts(p) : Instance::OnchipParts{};
  // and how many rounds of their clusters the device runs (counted_rounds; 0 where it does not
  // answer), for the two tie-breaks that ask it
  const std::int64_t ra = in_parts ? counted_rounds(a, p, pa) : 0, rb = in_parts ? counted_rounds(b, p, pb) : 0;
  const bool fewer_rounds_decide = ra > 0 && rb > 0 && ra != rb;
  // parts past a portable cluster's 8, first (the two layouts' 16-bit forwards, below) only
  // where clusters of 8 a group would fill at most kOnchipFwdWidePartsBelowCuShare of the
  // compute units
  const bool wide_a = pa.parts > kClusterPortable, wide_b = pb.parts > kClusterPortable;
  const bool wide_first = double(p.num_groups()) * kClusterPortable <= kOnchipFwdWidePartsBelowCuShare * cus;
  if (describe(x.family).columns_channels_last && p.layout == Layout::channels_last) {
    // groups narrower than the vector take a workgroup a column of V channels
    // (fwd_onchip_columns, bwd_onchip_columns): the most workgroups before the widest vector,
    // since these small tensors wait on latency, not bytes (H100, fp16 / bf16, L2-cold, bench.py --best:
    // instance_norm_32x64, C/G = 1, 2-channel columns, 64 workgroups, 6.15 / 6.19 us against
    // 8-channel ones, 16, 8.0 / 8.0; tiny, C/G = 4, a 4-byte vector's rows, 8 workgroups,
    // 2.69 / 2.65 against 8-channel columns, 4, 4.11 / 4.14)
    // A column in parts (fwd_onchip_columns_parts_kernel) counts its parts: instance_norm_32x64
    // 128 x 8 x 1 in 8 parts (128 workgroups) 4.36 / 4.31 us against 256 x 8 x 1 in 4 (64) 4.75 /
    // 4.68 and 256 x 2 x 8 whole (64) 5.00 / 4.96 (H200, fp16 / bf16, L2-cold, bench.py --best;
    // bench/NOTES.md, "Columns in parts")
    const auto units = [&](const InstanceSpec& s, bool column, const Instance::OnchipParts& q) {
      return onchip_cl_workgroups(p.num_groups(), p.channels_per_group(), s.vector) * (column ? std::max(1, q.parts) : 1);
    };
    const std::int64_t ua = units(x, ca, pa), ub = units(y, cb, pb);
    // The backward's, while either leaves compute units idle: where both fill them, the vector
    // rules below (bench.py --best --shape, H200, fp16 SiLU, L2-cold, 2026-12-03; bench/NOTES.md,
    // "What the heuristic sent off the suite": 32 x 256 x 8 x 8 at G = 64, C/G = 4, 8-channel
    // columns 128 x 8 x 1, 1024 workgroups, 9.78 us against 4-byte rows 256 x 2 x 8, 2048, 22.38;
    // 8 x 256 x 5 x 5 at G = 64 6.58 against 8.45). The forward's is measured below them only.
    const bool fill_both = p.op != Op::fwd && std::min(ua, ub) >= cus;
    if (ua != ub && !fill_both) return ua > ub;
    // columns (the same vector, equal units): the fewest threads, each with more rows
    // (instance_norm_32x64: 256 x 8 6.15 / 6.19 us, 512 x 16 6.6 / 6.6, 1024 x 16 7.7 / 7.8;
    // 8-channel columns 256 x 4 8.0 / 8.0, 512 x 8 8.2 / 8.2). The backward the same
    // (instance_norm_32x64: 2-channel columns 256 x 8 7.7 / 7.5, 512 x 16 8.1 / 8.0, 512 x 32
    // 9.9 / 9.8; 8-channel 256 x 4 9.0 / 8.7, 512 x 4 9.0 / 9.2; tiny: rows of 4-byte vectors,
    // 8 workgroups, 3.6 / 3.6 against 8-channel columns, 4, 4.5 / 4.5)
    if (ua == ub && ca && x.block != y.block) return x.block < y.block;
  }
  if (x.family == Family::onchip && p.op == Op::fwd && p.layout == Layout::channels_last) {
    // the channels-last onchip forward. Groups that may be held in parts (Instance::onchip_parts):
    // instances of at most 16 values a thread first, whatever their vector, where the parts hold
    // the group so (more workgroups, each a shorter chain of loads, reductions, exchange and
    // stores): H100, fp16 / bf16, L2-cold, bench.py --best, 2026-11-28 (bench/NOTES.md, "Sixteen
    // values a thread"): sd15_16x1280 256 x 8 x 2 in 3 parts 4.95 us against 512 x 4 x 8 whole
    // 5.34; sd15_16x2560 256 x 8 x 2 in 6 6.41 / 6.50 against 256 x 4 x 8 in 3 7.16 / 7.18;
    // sd15_32x640 256 x 2 x 8 in 6 7.23 against 256 x 4 x 8 in 3 7.70; sd15_32x960 256 x 2 x 8 in 8
    // 8.88 against 512 x 2 x 16 in 2 9.02. Of 256 threads (kOnchipClFwdPartThreads): the first of
    // 512 with 16 values, 512 x 4 x 4, lost (H200, fp16 / fp32, 2026-11-29: sd15_32x1920 in 8 parts
    // 15.35 us against 1024 x 4 x 8 in 2 12.25, fp32 odd_1d_8191_c256 33.29 against 256 x 4 x 8
    // 29.09). Where no such instance holds the group in a cluster's parts (vae_64x512,
    // sd15_32x1280, det_25x42x2048), as below. fp32 the same (H200, SiLU, L2-cold, bench.py --best,
    // 2026-11-29; bench/NOTES.md, "fp32's onchip forward"): sd15_64x320, 64 groups of 40960, 256 x
    // 2 x 8 in 10 parts 15.47 us against 512 x 2 x 16 in 3 16.50 and 1024 x 2 x 16 in 2 17.86;
    // r50_56x256_n32, 1024 groups of 25088, 256 x 4 x 4 and 256 x 2 x 8 79.4-79.5 against 1024 x 4
    // x 8 whole 83.2 (the fastest 512 x 2 x 16 in 2, 76.8), but without the 16-bit wide parts'
    // limit, which would have taken sd15_64x320's 3 parts.
    const bool sixteen_bit = size_of(p.x_dtype) == 2;
    // 16-bit: first the instances whose slots load at once (kOnchipAtOnceSlots, 7a9ce36) where
    // they hold the group whole; in parts those of 16-byte vectors, and of 256 threads in at most
    // a portable cluster's parts (kOnchipClFwdPartThreads). Before every rule below, which
    // were measured when such slots loaded in rounds. H200, fp16 / bf16 SiLU, L2-cold, bench.py
    // --best, 2026-11-29, sixteenth session (bench/NOTES.md, "Four slots at once"). Whole:
    // sd15_8x2560 (5120 elements) 256 x 8 x 4 3.46 / 3.52 us against 512 x 4 x 8 4.43 / 4.46;
    // sd15_16x640 512 x 4 x 4 3.78 / 3.80 against 256 x 4 x 8 4.44 / 4.50. 16-byte in parts,
    // past 8 too: det_25x42x2048 256 x 8 x 4 in 9 12.69 / 12.65 against 512 x 4 x 8 14.97 /
    // 14.86; g16_32x640 6.00 / 6.03 against 256 x 4 x 8 6.84 / 6.85; vae_64x512 (in 8 parts
    // each) 7.52 / 7.59 against 8.27 / 8.32; sdxl_32x2560 (the onchip family's since the 96 KB
    // rule above) in 11 16.35 / 16.40 against 512 x 4 x 8 16.58 / 16.49; one row the other way,
    // within 2% (sd15_32x1280 9.52 / 9.55 against 512 x 4 x 8 9.33 / 9.27). Narrower vectors in parts:
    // sd15_32x640 256 x 4 x 4 in 6 6.20 / 6.20 against 256 x 2 x 8 6.76 / 6.79, odd_31x31_c640 in
    // 5 5.95 / 5.91 against 6.79 / 6.82, sd15_16x1920 in 4 5.36 / 5.35 against 256 x 4 x 8 6.02 /
    // 6.00, sd15_32x320 256 x 2 x 4 in 6 5.46 / 5.48 against 5.89 / 5.88; not in 16 parts
    // (sd15_32x960 256 x 2 x 4 9.92 / 10.12 against 256 x 2 x 8 in 8 8.21 / 8.27, sd15_32x1920
    // 256 x 4 x 4 14.27 / 14.15 against 1024 x 4 x 8 in 2 12.33 / 12.31), nor 512 threads in parts
    // (512 x 4 x 4 sd15_32x640 7.02, sd15_32x1920 in 8 15.51, sd15_16x2560 6.56 against 5.94).
    // Between two such instances the rules below (layer_norm_32x64 256 x 8 x 2 in 16 parts 3.96 /
    // 3.94 against 256 x 8 x 4 in 8 4.27 / 4.29; vae_64x512 256 x 8 x 4 in 8 against 256 x 8 x 2
    // in 16 9.19), but for the 8-byte vectors' rule, which was theirs in rounds.
    const auto once = [&](const InstanceSpec& s, const Instance::OnchipParts& q) {
      return s.per_thread <= kOnchipAtOnceSlots &&
             (q.parts <= 1 || s.vector * size_of(p.x_dtype) == 16 ||
              (s.block <= kOnchipClFwdPartThreads && q.parts <= kClusterPortable));
    };
    // (rows: a column's instances, groups narrower than the vector, were not measured so)
    const bool once_a = sixteen_bit && !ca && once(x, pa), once_b = sixteen_bit && !cb && once(y, pb);
    if (sixteen_bit && in_parts) {
      // 16-bit groups in parts: before the slots at once, the fewer rounds of clusters where the
      // device answers them (Instance::onchip_rounds; since fa36957 a parts kernel with the rows
      // held as loaded runs more at once). H200, fp16 / bf16 SiLU, L2-cold, bench.py --best,
      // 2026-11-30, thirty-fifth session (bench/NOTES.md, "Rounds before the slots at once"):
      // det_25x42x2048 256 x 8 x 8 in 5 parts 10.91 / 11.20 us against 256 x 8 x 4 in 9 12.51 /
      // 12.59.
      if (fewer_rounds_decide) return ra < rb;
    }
    if (once_a != once_b) return once_a;
    if (once_a && once_b && !in_parts && std::min(x.vector, y.vector) * size_of(p.x_dtype) >= 8) {
      // 16-bit groups below the parts' 8K elements, both instances loading at once with vectors
      // of 8 bytes or more: the tighter fit first, then the more slots a thread (at the same fit,
      // 8-byte vectors before 16-byte ones), then the rules below. H200, fp16 / bf16 SiLU,
      // L2-cold, bench.py --best, 2026-11-29 (bench/results/h200, the sixteenth session's
      // instance tables; bench/NOTES.md, "Whole groups at once"): r50_7x2048_n32 (3136 elements)
      // 256 x 4 x 4 8.18 / 8.15 us against 256 x 8 x 2 8.52 / 8.51, 256 x 8 x 4 9.87 / 10.07 and
      // 512 x 4 x 4 12.39 / 12.65; det_13x21x256 (2184) 3.19 / 3.23 against 3.33 / 3.36, 3.40 /
      // 3.50 and 3.46 / 3.52; sd15_8x1280 (2560) 3.07 / 3.07 against 3.13 / 3.14, 3.21 / 3.27
      // and 3.32 / 3.34. At the same fit and slots the wider vector, below (sd15_8x2560, 5120:
      // 256 x 8 x 4 3.52 / 3.58 against 512 x 4 x 4 3.55 / 3.63).
      if (x.chunk_elements() != y.chunk_elements()) return x.chunk_elements() < y.chunk_elements();
      if (x.per_thread != y.per_thread) return x.per_thread > y.per_thread;
    }
    if (in_parts) {
      // 16-bit groups in parts from 72 KB of x a compute unit (the two rules above that reach
      // past kOnchipPartsClFwdBytesPerCu), after the slots at once: the instances of 256 threads
      // whose parts kernel holds its rows as loaded (onchip_held_bits, fa36957: 256 x 8 x 8 at
      // 79 registers a thread, not 128), whatever their parts. H200, fp16 / bf16 SiLU, L2-cold,
      // bench.py --best, 2026-11-30 (bench/results/h200): vae_128x512 256 x 8 x 8 in 16 parts
      // 20.5 / 21.1 us against 512 x 2 x 16 and 512 x 4 x 8 24.9-28.1 and 1024 x 4 x 8 in 8 30.9
      // / 30.7; det_50x84x1024 19.8 / 20.8 against 24.9-30.3; sdxl_64x1280 and odd_61x67_c1280
      // 25.2-26.6 against 33.3-40.8; sd15_64x640 (C/G = 20) 256 x 4 x 8 in 11 17.0 / 17.8
      // against 512 x 4 x 8 18.3 / 18.4 and 1024 x 4 x 8 in 3 21.6 / 21.5. Below 72 KB not so
      // (sd15_32x1920, 58 KB: 1024 x 4 x 8 in 2 12.1 / 12.1 against 256 x 4 x 8 in 8 13.4 / 11.3,
      // the two types apart).
      const auto held = [&](const InstanceSpec& s) {
        return s.block <= kOnchipClFwdPartThreads && onchip_held_bits(int(size_of(p.x_dtype)), s.vector, s.per_thread);
      };
      if (bytes_per_cu(p, cus) >= kOnchipPartsClFwdBytesPerCu && held(x) != held(y)) return held(x);
      // 16-bit: parts past a portable cluster's 8 (Instance::onchip_parts) only for groups so
      // few that clusters of 8 would not fill the compute units once: layer_norm_32x64 (2
      // groups) 256 x 8 x 2 in 16 parts 4.06 us against 256 x 4 x 8 in 8 5.44;
      // odd_97x89_c160_g8 (16 groups; H200, fp16 / bf16, the sixteenth session's instance
      // tables, bench/NOTES.md, "Whole groups at once") 512 x 4 x 8 in 11 11.87 / 11.94 against
      // 1024 x 4 x 8 in 6 12.89 / 12.91; not 32 groups (vae_64x512 256 x 8 x 2 in 16 9.26
      // against 256 x 4 x 8 in 8 8.32; g16_32x640 the exception, 6.55 against 7.02), nor 64
      // (sd15_32x1280 10.64 against 512 x 4 x 8 in 3 9.45). H200, fp16 SiLU, L2-cold, bench.py
      // --best, the two sides in one session (bench/NOTES.md, "Sixteen parts").
      if (sixteen_bit && wide_a != wide_b) return wide_a == wide_first;
      const auto few = [](const InstanceSpec& s) {
        return s.per_thread * s.vector <= kOnchipClFwdPartValues && s.block <= kOnchipClFwdPartThreads;
      };
      if (few(x) != few(y)) return few(x);
    }
    // Then, 16-bit values (fp32 unmeasured), instances the rule above does not take first (their
    // slots load in rounds, or at once but in parts it leaves out): from a large group 8-byte
    // vectors before 16-byte ones, below it after 16-byte and 4-byte ones (H100, fp16 / bf16,
    // L2-cold, bench.py --best, the same process: sd15_8x2560, 5120 elements, 512 x 4 x 8 4.70 /
    // 4.74 us against 512 x 8 x 8 4.90 / 4.93; sd15_16x1280, 10240, 5.55 / 5.66 against 6.00 /
    // 6.03; sd15_16x2560, 20480, 1024 x 4 x 8 7.83 / 7.71 against 8.49 / 8.41), not a smaller one
    // (r50_7x2048_n32, 3136: 256 x 8 x 2 10.28 / 10.56 against 256 x 4 x 8 10.75 / 10.91;
    // sd15_8x1280, 2560: 3.97 / 4.01 against 4.09 / 4.20), where 4-byte vectors beat them too (256
    // x 2 x 8: r50_7x2048_n32 10.01 / 10.09; det_13x21x256, 2184, 3.99 / 3.99 against 4.15 / 4.19;
    // tiny, 256, 2.65 / 2.64 against 2.76 / 2.74); bench/NOTES.md, "8-byte vectors for the
    // channels-last onchip forward"
    const bool eight_a = x.vector == 4, eight_b = y.vector == 4;
    if (sixteen_bit && !once_a && eight_a != eight_b)
      return eight_a == (p.group_elements() >= kOnchipClFwdEightByteFromElements);
  }
  if (in_parts && p.op != Op::fwd && p.layout == Layout::channels_last && size_of(p.x_dtype) == 2) {
    // the channels-last onchip backward of groups so few that both instances' workgroups in parts
    // fill less than half the compute units: the more workgroups first, before the vectors
    // below, since each workgroup's loads are what bounds it there (layer_norm_32x64, 2 groups
    // of 65536: 256 x 8 x 4 in 8 parts, 16 workgroups, 7.91 / 7.65 us against 512 x 2 x 16 in 4,
    // 8, 8.66 / 8.71; H200, fp16 / bf16 SiLU, L2-cold, bench.py --best, 2026-12-03; where one
    // fills half, the rules below: vae_64x512, 32 groups, 512 x 2 x 32 in 2 14.46 / 14.58
    // against 256 x 8 x 4 in 8 16.86 / 16.21; bench/NOTES.md, "Few workgroups in parts")
    const std::int64_t wa = a.onchip_clusters(p) * pa.parts, wb = b.onchip_clusters(p) * pb.parts;
    const double few = kOnchipClBwdFewWorkgroupsCuShare * cus;
    if (wa != wb && double(wa) < few && double(wb) < few) return wa > wb;
  }
  if (x.family == Family::onchip && p.op != Op::fwd && p.layout == Layout::channels_last && x.vector != y.vector &&
      size_of(p.x_dtype) == 2 &&
      (p.group_elements() >= kOnchipClBwdFourByteFromElements ||
       (cl_bwd_many_groups(p, cus) && run_bytes(p) >= kOnchipClBwdManyGroupsRunBytes))) {
    // the channels-last onchip backward of a large group of 16-bit values (it builds no 8-byte
    // instances; fp32 unmeasured): 4-byte vectors before 16-byte ones, as the forward's narrower
    // vectors win there (H100, fp16 / bf16, L2-cold, bench.py --best: sd15_16x1280, 10240
    // elements, 512 x 2 x 16 8.63 / 8.67 us against 512 x 8 x 4 9.16 / 9.18), not below
    // (sd15_8x2560, 5120: 8.33 / 8.25 against 8.26 / 8.22; sd15_8x1280, 2560, 256 x 2 x 8 6.91
    // / 6.90 against 256 x 8 x 2 6.47 / 6.55; det_13x21x256, 2184, 5.81 / 5.83 against 5.58 /
    // 5.60). One shape above the threshold: the thinnest of these rules' evidence. And many
    // groups of any size (the rule of many small groups of wide runs): r50_7x2048_n32 (1024 groups
    // of 3136) 256 x 2 x 8 17.64 / 17.66 us against 256 x 8 x 2 19.90 / 20.00 (H200, SiLU,
    // L2-cold, bench.py --best, 2026-12-03; ptxas: 80 registers, three workgroups a compute unit,
    // against 98, two; bench/NOTES.md, "Channel sums in teams, channels-last"), runs as wide as
    // that rule's: not narrow ones (32 x 128 x 8 x 8 at G = 16, 16-byte runs, 512 groups: 128 x 8
    // x 1 6.10 us against 256 x 2 x 8 9.35; bench/NOTES.md, "What the heuristic sent off the suite").
    if ((x.vector == 2) != (y.vector == 2)) return x.vector == 2;
  }
  if (x.vector != y.vector) return x.vector > y.vector;
  if (in_parts) {
    // groups held in parts where the device says how many of their clusters it runs at once
    // (counted_rounds): the fewer rounds first, since a second round of clusters starts when
    // the first ends. H100, fp16 / bf16 SiLU, L2-cold, bench.py --best, the occupancy query's
    // answers beside them (bench/NOTES.md, "Rounds of clusters"): sd15_32x1920 channels-first
    // (64 groups) 512 x 8 x 8 in 2 parts (66 clusters at once, one round) 12.0 / 12.4 us against
    // 256 x 8 x 4 in 8 (62 at once, two rounds) 13.7 / 13.8 and 256 x 8 x 8 in 4 (62, two
    // rounds) 16.2 / 16.3, where the most parts win below one round (sd15_32x960, 256 x 8 x 2 in
    // 8, 92 at once: 7.4 / 7.2 against 256 x 8 x 4 in 4's 8.4 / 8.2). On the H200 since the
    // parts held as loaded, that second round of 2 is not counted and 256 x 8 x 4 wins there
    // (counted_rounds; fp16 / bf16 10.1 / 9.9 us against 512 x 8 x 8's 10.7 / 11.1).
    if (fewer_rounds_decide) return ra < rb;
    // groups that may be held in parts (Instance::onchip_parts): the instance whose slots the
    // group's part fills most (in eighths); then channels-last the fewest parts (of those that
    // cover half the compute units, from kOnchipPartsSpreadFromElements), or the most where the
    // groups are fewer than a quarter of the compute units, and channels-first the parts nearest
    // 4096 elements (below), then the most. H100, fp16 / bf16 SiLU, L2-cold, bench.py --best,
    // 2026-11-28 (bench/NOTES.md, "A group in parts"). Channels-last: sd15_32x1920 1024 x 4 x 8
    // in 2 parts 13.6 us against 512 x 4 x 8 in 4 16.2 and 256 x 4 x 8 in 8 14.7 (the three fill 94%); sd15_32x1280 512 x
    // 4 x 8 in 3 (83%) 10.2 against 1024 x 4 x 8 in 2 (62%) 10.9 and 256 x 4 x 8 in 6 (83%)
    // 12.6; sd15_16x1280 512 x 4 x 8 in 1 (62%) 5.3 against 256 x 4 x 8 in 2 (62%) 5.9; but
    // vae_64x512, 32 groups, 256 x 4 x 8 in 8 8.8 against 512 x 4 x 8 in 4 10.3 (both 100%).
    // Channels-first: sd15_32x960 256 x 8 x 2 in 8 7.3 against 256 x 8 x 4 in 4 8.2 and 512 x
    // 8 x 8 whole 10.1 (94% each); sd15_16x1920 256 x 8 x 1 in 8 5.5, 256 x 8 x 2 in 4 5.4,
    // 256 x 8 x 4 in 2 6.3; vae_64x512 256 x 8 x 4 in 8 8.5 against 512 x 8 x 8 in 2 10.1 (and
    // sd15_32x1920 by the rounds above, H100). The backward
    // (channels-last) without the fill: the full slots of 256 x 2 x 8 in 5 parts ran 15.1 us on
    // sd15_32x640 and 18.5 on sd15_16x2560 where the fastest instance ran 11.9 and 11.5, and 9.5
    // in 3 parts on sd15_16x1280 against 512 x 2 x 16 whole's 8.6 (H100, fp16, bench.py --best,
    // 2026-11-28; bench/NOTES.md, "The backward in parts").
    const std::int64_t unit = p.layout == Layout::channels_last ? p.channels_per_group() : x.vector;
    const auto eighths = [&](const InstanceSpec& s, const Instance::OnchipParts& q) {
      return 8 * unit * q.part_rows / (std::int64_t(s.block) * s.per_thread * s.vector);
    };
    const std::int64_t fa = eighths(x, pa), fb = eighths(y, pb);
    if (p.op == Op::fwd && p.layout == Layout::channels_first && pa.parts > 1 && pb.parts > 1) {
      // channels-first, before the fill, the parts nearest 8 KB (kOnchipCfFwdPartBytes, 4096
      // 16-bit elements): with clusters of up to 16 the most parts were 2048-element
      // ones, which lost to 4096 wherever both held the group (sd15_16x2560 256 x 8 x 1 in 10
      // parts 6.06 us against 256 x 8 x 2 in 5 5.48, sd15_32x640 6.03 against 5.51,
      // odd_31x31_c640 7.05 against 6.53; sd15_16x1920 128 x 8 x 1 in 15, full, 6.55 against
      // 256 x 8 x 2 in 4, 94% full, 5.11), as 8192-element ones did (vae_64x512 256 x 8 x 4 in 8
      // 8.14 against 256 x 8 x 2 in 16 7.19, g16_32x640 6.99 against 6.07, sd15_32x1280 8.50
      // against 7.92). H200, fp16 SiLU, L2-cold, bench.py --best (bench/NOTES.md, "Sixteen
      // parts"). The H100's clusters of 8 agree (below: sd15_16x1920 256 x 8 x 2 in 4 5.4
      // against 256 x 8 x 1 in 8 5.5 and 256 x 8 x 4 in 2 6.3). In bytes, since fp32 wants the
      // same 8 KB, by a little: sd15_16x1280 (10240 elements) 256 x 4 x 2 in 5 parts of 2048
      // 4.97 us against 256 x 4 x 4 in 3 of 4096 5.10 (H200, SiLU, L2-cold, bench.py --best,
      // 2026-11-29, fourteenth session; 5.03 against 6.18 before the four-slot instances loaded x
      // at once); where rounds of clusters differ they decide first (sd15_64x320, r50_56x256_n32:
      // 256 x 4 x 8 in 5 and 4 parts).
      // 16-bit: first, as channels-last (above), parts past a portable cluster's 8 only for
      // groups so few that clusters of 8 would not fill the compute units once, since a
      // cluster of up to 16 runs fewer at once where they do: sd15_64x320 and sd15_32x1280 (64
      // groups of 40960) bf16 256 x 8 x 4 in 5 parts 7.45 / 7.49 us against 256 x 8 x 2 in 10
      // 7.75 / 7.77 (one round each), g16_32x640 (32 groups) 5.92 / 6.03 against 6.04 / 6.14;
      // vae_64x512 (32 groups) level, 256 x 8 x 4 in 8 7.14 / 7.19 against 256 x 8 x 2 in 16 7.12
      // / 7.23; layer_norm_32x64 (2 groups) the other way, 256 x 8 x 2 in 16 3.88 / 3.90 against
      // 256 x 8 x 4 in 8 4.25 / 4.33. H200, bf16 / fp16 SiLU, L2-cold, bench.py --best
      // (bench/NOTES.md, "Two rounds, fewer in the second").
      if (size_of(p.x_dtype) == 2 && wide_a != wide_b) return wide_a == wide_first;
      // 16-bit: then a group that two parts of 8K slots (kOnchipCfFwdPairPartSlots) hold at
      // least 7/8 full (kOnchipCfFwdPairFillEighths), one workgroup of 256 a compute unit where
      // the groups are 64, before four parts of 4096: sd15_16x1920 (15360 elements) 256 x 8 x 4
      // in 2 4.96 / 4.82 us (fp16 / bf16) against 256 x 8 x 2 in 4 5.08 / 5.08; not where two
      // such parts are less full (sd15_16x1280, 10240 elements, 5/8: 4.49 / 4.53 against 256
      // x 8 x 2 in 3 4.47 / 4.42) nor in three (sd15_32x640, 20480: 5.85 / 5.80 against 256 x
      // 8 x 2 in 5 5.42 / 5.35). H200, SiLU, L2-cold, bench.py --best (bench/NOTES.md, "Two
      // parts of 8K"). The H100 before the slots loaded at once had it the other way (above).
      const auto pair = [&](const InstanceSpec& s, const Instance::OnchipParts& q, std::int64_t fill) {
        return q.parts == 2 && fill >= kOnchipCfFwdPairFillEighths &&
               std::int64_t(s.block) * s.per_thread * s.vector == kOnchipCfFwdPairPartSlots;
      };
      if (size_of(p.x_dtype) == 2 && pair(x, pa, fa) != pair(y, pb, fb)) return pair(x, pa, fa);
      const auto off = [&](const Instance::OnchipParts& q) {
        return std::abs(std::log2(double(q.part_rows * unit * std::int64_t(size_of(p.x_dtype))) /
                                  double(kOnchipCfFwdPartBytes)));
      };
      const double oa = off(pa), ob = off(pb);
      if (oa != ob) return oa < ob;
    }
    if (p.op == Op::fwd && fa != fb) return fa > fb;
    if (pa.parts != pb.parts) {
      const bool most = p.layout == Layout::channels_first || 4 * p.num_groups() < cus;
      // the backward's groups of runs narrower than kOnchipPartsClBwdRunBytes, of any size that
      // parts take (kOnchipPartsFromElements; below)
      const bool narrow = p.op != Op::fwd && run_bytes(p) < kOnchipPartsClBwdRunBytes;
      if (!most && (p.group_elements() >= kOnchipPartsSpreadFromElements || narrow)) {
        // channels-last groups of 16K elements or more: not so few parts that half the compute
        // units stay idle (sd15_32x960, 30720 elements: 512 x 2 x 16 in 2 parts 9.0 / 9.0 us
        // against 1024 x 2 x 16 whole 10.0 / 10.1); smaller groups pay more for parts than
        // for idle units (sd15_16x1280, 10240: 512 x 4 x 8 whole 5.3 against 256 x 4 x 8 in 2 5.9)
        // but for the backward's narrow runs: sd15_32x320 (64 groups of 10240, 20-byte runs)
        // 256 x 2 x 8 in 3 parts 9.26 / 9.41, 9.34 / 9.20 and 9.20 / 9.20 us (fp16 / bf16, three
        // processes) against 512 x 2 x 16 whole's 9.78 / 9.90, 9.77 / 9.70 and 9.74 / 9.71, where
        // at the same groups of 80-byte runs (sd15_16x1280) whole leads by 9% (8.16 / 8.10
        // against 256 x 2 x 8 in 3's 8.88 / 8.88); H200, SiLU, L2-cold, bench.py --best
        // (bench/NOTES.md, "The channels-last backward of 20-byte runs in parts")
        const bool spread_a = 2 * p.num_groups() * pa.parts >= cus, spread_b = 2 * p.num_groups() * pb.parts >= cus;
        if (spread_a != spread_b) return spread_a;
      }
      return most == (pa.parts > pb.parts);
    }
  }
  if (describe(x.family).streams && p.op == Op::fwd) {
    // Channels-first: per_thread 2 (one workgroup of 512 threads a compute unit, ~190 KB of x
    // held) up to 140 KB of x a compute unit, 1 from there. H100 (2026-11-26): sd15_64x640 19.8
    // us against 20.3 at two; sdxl_128x320 27.9 against 27.9; det_25x42x2048 19.0 against 20.0;
    // vae_256x512 74.8 against 77.0; sdxl_128x960 71.7 against 72.5; vae_512x256 150.9 against
    // 157.2. Since the eviction hints (H200, fp16 / bf16, bench.py --best, 2026-11-30; bench/
    // NOTES.md, "The heuristic after the eviction hints") one wins from 150 KB: sdxl_128x320,
    // sdxl_64x1280, odd_61x67_c1280, sdxl_latent_152x104 (150-155 KB) by 1.0-4.3%; at 58-127
    // KB the two are within 1.6% but for vae_128x512 fp16 (e1 19.61 us against 20.54).
    // Channels-last: one column vector a thread where the row allows it. Two
    // (half the workgroups, each with twice the loads in flight) won below 100 KB a compute
    // unit while every item paid ~4 us of bank-conflicted reductions; since those are gone
    // (bench/NOTES.md, "The channels-last stream kernels' per-item costs") one wins there too
    // (sd15_64x640, 79 KB: 23.4 us against 24.5, bf16 25.2 against 26.3; odd_127x127_c320:
    // 22.8 against 23.3, bf16 24.5 against 25.4; sd15_32x1920: 22.0 against 22.1, bf16 23.2
    // against 23.9), as it does above (bf16 sd15_64x960 34.0 against 36.2; det_50x84x1024
    // 35.1 against 37.1; vae_512x256 162.3 against 175.9). Then 512 threads.
    if (x.per_thread != y.per_thread)
      return p.layout == Layout::channels_first
                 ? (x.per_thread == 2) == (bytes_per_cu(p, cus) < kStreamCfFwdOneGroupBytesPerCu)
                 : x.per_thread < y.per_thread;
    return x.block > y.block;
  }
  if (describe(x.family).streams) {
    // the backward (channels-last, one column vector a thread): 512 threads, fewer items and
    // partials (as the forward: sd15_64x320 b512 23.1 us, b256 25.2; vae_512x256 162.0
    // against 164.7)
    if (x.per_thread != y.per_thread) return x.per_thread < y.per_thread;
    return x.block > y.block;
  }
  if (x.family == Family::onchip && (p.op == Op::fwd || p.layout == Layout::channels_last) && x.block != y.block) {
    // the forward, and the channels-last backward (both walk a group's rows there): the most
    // threads, up to 512, that each still get a vector of the group
    // (channels-last, rows walked: SD 16x16 C=1280, 1280 vectors of 8: 512 x 8 6.0 us against
    // 256 x 8 7.3; SD 8x8 C=2560, 640 of 8: 512 x 8 4.9 against 256 x 4 5.0; past 512 more
    // threads cost: SD 16x16 C=640, 2560 of 2: 512 x 16 5.3 against 1024 x 16 6.2; SD 16x16
    // C=1920: 6.8 against 7.4; SD 32x32 C=320: 7.9 against 8.3; bench/NOTES.md, "The
    // channels-last onchip forward by rows"), and where no block is that small the smallest
    // (det 7x11 C=256, 77 vectors: 128 x 1 3.2 us against 512 x 8 3.9). The backward the
    // same (bench/NOTES.md, "The channels-last onchip backward by rows": SD 8x8 C=2560 512 x 8
    // 7.8 us against 256 x 8 8.4; SD 16x16 C=640 512 x 2 7.8 against 1024 x 2 9.7; SD 32x32
    // C=320 10.4 against 11.5; hw1_512 128 x 8 5.1 against 512 x 8 8.6).
    // Channels-first, the forward's threads each take two vectors of the group (vector q at
    // thread q % block, fwd_onchip_aligned): sd15_16x640, 640 vectors of 8, 256 x 8 x 4 4.48 /
    // 4.52 us (fp16 / bf16) against 512 x 8 x 8 4.69 / 5.13; sd15_8x2560 4.51 / 4.54 against
    // 4.79 / 5.25; with 1280 (sd15_32x320) 512 x 8 x 8 5.75 / 6.42 against 256 x 8 x 8 5.99 /
    // 7.41 (bench.py --best, 2026-11-27).
    // The channels-last backward of many groups (the rule of many small groups of wide runs)
    // the fewest threads first, the most workgroups a compute unit: r50_7x2048_n32 (1024 groups)
    // 256 x 2 x 8 17.64 / 17.66 us against 512 x 2 x 16 42.93 / 42.49 (H200, SiLU, L2-cold,
    // bench.py --best, 2026-12-03; bench/NOTES.md, "Channel sums in teams, channels-last").
    if (p.op != Op::fwd && p.layout == Layout::channels_last && cl_bwd_many_groups(p, cus)) return x.block < y.block;
    const std::int64_t vectors = p.group_elements() / x.vector;
    const std::int64_t each = p.layout == Layout::channels_first && p.op == Op::fwd ? 2 : 1;
    const bool fill_a = x.block * each <= vectors, fill_b = y.block * each <= vectors;
    if (fill_a != fill_b) return fill_a;
    if (!fill_a) return x.block < y.block;
    // The channels-last backward of 16-bit values, since its channel sums went to teams of
    // lanes: of the workgroups whose threads each get a vector, the fewest threads first
    // (sd15_8x2560, 640 vectors of 8: 256 x 8 x 4 6.58 / 6.78 us against 512 x 8 x 4 7.12 / 7.26;
    // H200, fp16 / bf16 SiLU, L2-cold, bench.py --best, 2026-12-03; bench/NOTES.md, "Channel sums
    // in teams, channels-last"; before the teams, 512 x 8 led there: above).
    if (p.op != Op::fwd && p.layout == Layout::channels_last && size_of(p.x_dtype) == 2) return x.block < y.block;
    const bool cap_a = x.block <= kOnchipMostThreads, cap_b = y.block <= kOnchipMostThreads;
    if (cap_a != cap_b) return cap_a;
    return cap_a ? x.block > y.block : x.block < y.block;
  }
  if (x.family == Family::onchip && p.op != Op::fwd && x.block != y.block) {
    // the channels-first backward: 256 threads over 128, where both hold the group
    // (instance_norm_32x64 5.4 us against 5.6)
    return x.block > y.block;
  }
  if (x.family == Family::split && p.op == Op::fwd && x.chunk_elements() != y.chunk_elements()) {
    // the forward's slices of 1024 elements (128 x 1) where the tensor is tiny: its few groups
    // in 8192-element slices leave most compute units idle (layer_norm_32x64, 2 groups, 0.3 MB:
    // 5.48 / 5.56 us channels-first / last against 256 x 4's 6.47 / 7.1); from 8 KB a compute
    // unit the slices of 8192 and more first, as below (g16_32x640 channels-last 9.73 against
    // 128 x 1's 9.97; vae_64x512 9.68 against 11.70); H100, fp16, L2-cold, bench.py --best
    const bool small_a = x.chunk_elements() < kSplitFwdSmallSliceElements,
               small_b = y.chunk_elements() < kSplitFwdSmallSliceElements;
    if (small_a != small_b) return small_a == (bytes_per_cu(p, cus) < kTinyBytesPerCu);
    // 4096-element slices (128 x 4) against 8192 (256 x 4; H100, bench.py --best, fp16 / bf16,
    // L2-cold; bench/NOTES.md, "Slices of 4096 for the split forward"): where the 8192-element
    // grid leaves compute units idle (g16_32x640, 1.2 workgroups a compute unit: channels-last
    // 9.04 / 9.18 us against 9.75 / 9.94) and where it is past the one wave of 256-thread
    // workgroups (64 registers) that a compute unit holds, 4 (det_25x42x2048 channels-last, 4.4:
    // 16.62 / 17.08 against 18.28 / 18.68; sdxl_32x2560, 4.8: 18.30 / 18.61 against 19.32 /
    // 19.48, channels-first 16.56 / 17.03 against 16.92 / 17.20; sd15_64x640 channels-first 16.47
    // / 16.68 against 16.99 / 17.20), halving the tail, the smaller slices win; between, the
    // larger (vae_64x512, 1.9: channels-first 9.77 / 9.97 against 10.28 / 10.31, channels-last
    // 12.13 / 12.45 against 12.75 / 13.04; sd15_32x1280 channels-last, 2.4: 12.57 / 12.70 against
    // 13.01 / 13.20; sd15_32x1920 channels-first, 3.9: 13.73 / 14.19 against 13.75 / 14.13).
    const bool coarse_a = x.chunk_elements() >= kSplitFwdCoarseSliceElements,
               coarse_b = y.chunk_elements() >= kSplitFwdCoarseSliceElements;
    if (coarse_a != coarse_b) {
      const std::int64_t slices =
          (p.group_elements() + kSplitFwdCoarseSliceElements - 1) / kSplitFwdCoarseSliceElements;
      const double per_cu = double(p.num_groups()) * double(slices) / cus;
      return coarse_a == (per_cu >= kSplitFwdCoarseFromSlicesPerCu && per_cu < kSplitFwdCoarseBelowSlicesPerCu);
    }
  }
  const int order = describe(x.family).chunk_order;
  if (order == 0) return better_resident(a, b, p, dev);
  if (x.chunk_elements() != y.chunk_elements())
    return order < 0 ? x.chunk_elements() < y.chunk_elements() : x.chunk_elements() > y.chunk_elements();
  return x.block < y.block;
}

// Whether a group's contiguous runs span a multiple of `bytes` (Rule::group_run_bytes).
bool group_runs_of(const Problem& p, int bytes) {
  if (bytes == 0) return true;
  return run_bytes(p) % bytes == 0 &&
         (p.layout == Layout::channels_first || p.last_group_channels() * std::int64_t(size_of(p.x_dtype)) % bytes == 0);
}

// The first rule's pick among the instances of the problem's own key.
const Instance* rule_choice(const Registry& reg, const DeviceInfo& dev, const Problem& p, const Tensors* tensors,
                            std::string* rule_why) {
  const auto& bucket = reg.bucket(Key::of(p));
  const int cus = dev.cus();
  const double groups_per_cu = double(p.num_groups()) / cus;
  const double bytes = bytes_per_cu(p, cus);
  for (const Rule& rule : rules(p.op, dev.target())) {
    if (groups_per_cu >= rule.max_groups_per_cu || groups_per_cu < rule.min_groups_per_cu ||
        p.group_elements() < rule.min_group_elements || p.group_elements() > rule.max_group_elements ||
        p.c > rule.max_channels || p.c < rule.min_channels || !(rule.layouts & (1 << int(p.layout))) ||
        bytes < rule.min_bytes_per_cu || bytes >= rule.max_bytes_per_cu || !group_runs_of(p, rule.group_run_bytes) ||
        run_bytes(p) < rule.min_run_bytes ||
        !(rule.x_dtypes & (1 << int(p.x_dtype))))
      continue;
    const Instance* best = nullptr;
    for (const Instance* inst : bucket) {
      if (inst->spec().family != rule.family || inst->spec().chunk_elements() > rule.max_chunk_elements ||
          inst->spec().chunk_elements() < rule.min_chunk_elements || !inst->supports(p, tensors, nullptr, cus))
        continue;
      if (!best || better(*inst, *best, p, dev))
        best = inst;
    }
    if (best && best->spec().vector * int(size_of(p.x_dtype)) < rule.min_vector_bytes) best = nullptr;
    if (best) {
      if (rule_why) *rule_why = rule.why;
      return best;
    }
  }
  return nullptr;
}
}  // namespace

const Instance* heuristic_choice(const Registry& reg, const DeviceInfo& dev, const Problem& p,
                                 const Tensors* tensors, std::string* rule_why) {
  // A channels-first problem of spatial size 1 goes to the channels-last rules where the build
  // has that layout (in_layout: the same memory): their families read whole rows of C in
  // 16-byte vectors, where the channels-first ones see a group as C/G runs of one element
  // (hw1_512, C = 512, G = 32, fp16 forward: channels-last onchip 2.7 us against channels-first
  // looped 3.3; bench/NOTES.md, "A spatial size of 1").
  if (p.layout == Layout::channels_first && p.spatial_size() == 1)
    if (const Instance* inst = rule_choice(reg, dev, in_layout(p, Layout::channels_last), tensors, rule_why)) {
      if (rule_why) *rule_why += " (a spatial size of 1: run as channels-last, the same memory)";
      return inst;
    }
  return rule_choice(reg, dev, p, tensors, rule_why);
}

}  // namespace hipgn
