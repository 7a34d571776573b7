"""bench/sass_loads.py on excerpts of cuobjdump -sass listings of the channels-last stream forward
(H100, before f2f4bfb: bf16's load that waited for its shared-memory store, fp16's loads issued
together) and on two written in the same form (a loop of one load an iteration, loads in guarded
blocks)."""
import contextlib
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import sass_loads  # noqa: E402


def listing(kernel, body):
    lines = [f"\t\tFunction : {kernel}"]
    for address, text in body:
        lines.append(f"        /*{address:04x}*/                   {text} ;   /* 0x000fe20000000f00 */")
    return lines


BF16 = "_ZN5hipgn7kernels20fwd_stream_cl_kernelINS_9generated43gn_fwd_bf16_bf16_cl_swish_stream_b512_v8_e1EEEvNS_6ParamsE"
F16 = "_ZN5hipgn7kernels20fwd_stream_cl_kernelINS_9generated41gn_fwd_f16_f16_cl_swish_stream_b512_v8_e1EEEvNS_6ParamsE"

# bf16, phase 1 (before f2f4bfb): the second load issues after the store that reads the first's registers
SPLIT = [
    (0x1b30, "@P0 IMAD.WIDE R48, R10, 0x10, R8"),
    (0x1b40, "@P0 LDG.E.128 R28, desc[UR14][R48.64]"),
    (0x1bb0, "@!P3 IMAD R50, R35, 0x200, R32"),
    (0x1bc0, "@!P3 LEA R48, R50, UR8, 0x4"),
    (0x1bf0, "@!P3 STS.128 [R48], R28"),
    (0x1c40, "@!P5 LEA.HI.X R51, R48, R9, R49, 0x4, P4"),
    (0x1c50, "@!P5 LDG.E.128 R36, desc[UR14][R50.64]"),
    (0x1c80, "@P0 PRMT R54, R28, 0x7632, R54"),
    (0x1cd0, "@!P3 STS.128 [R49+0x2000], R36"),
    (0x1ce0, "@!P0 BRA 0x1ef0"),
    (0x1ef0, "EXIT"),
]
# fp16, the same phase: both loads, then the stores
TOGETHER = [
    (0x1b80, "@P0 LDG.E.128 R20, desc[UR12][R46.64]"),
    (0x1b90, "LDC R31, c[0x0][0x388]"),
    (0x1ba0, "@!P3 LDG.E.128 R24, desc[UR12][R40.64]"),
    (0x1c60, "@!P4 STS.128 [R30], R20"),
    (0x1c70, "@!P5 STS.128 [R31+0x2000], R24"),
    (0x1c80, "@!P0 BRA 0x1e90"),
    (0x1c90, "HADD2.F32 R31, -RZ, R20.reuse.H0_H0"),
    (0x1e90, "EXIT"),
]


class Waits(unittest.TestCase):
    def kernel(self, body, name="k"):
        return sass_loads.parse(listing(name, body))[name]

    def test_load_read_before_the_next_load_waits(self):
        self.assertEqual(sass_loads.waits(self.kernel(SPLIT)), [0x1b40])

    def test_loads_issued_together_do_not(self):
        self.assertEqual(sass_loads.waits(self.kernel(TOGETHER)), [])

    def test_a_loop_of_one_load_an_iteration_does_not(self):
        # the loop's closing branch ends the stretch: its load and the load after the loop are
        # not a pair, though the loop reads its load before that one issues
        body = [
            (0x100, "LDG.E.128 R4, desc[UR4][R2.64]"),
            (0x110, "FADD R12, R4, R12"),
            (0x120, "@P0 BRA 0x100"),
            (0x130, "LDG.E.128 R8, desc[UR4][R2.64+0x10]"),
            (0x140, "EXIT"),
        ]
        self.assertEqual(sass_loads.waits(self.kernel(body)), [])

    def test_guarded_blocks_do_not_hide_a_wait(self):
        # a slot's load and its widening in a block the forward branches skip (as the bf16 onchip
        # forward's slots were before 127b2b8): the next slot's load comes after the widening
        body = [
            (0x100, "@!P1 BRA 0x140"),
            (0x110, "LDG.E.128 R4, desc[UR4][R2.64]"),
            (0x120, "PRMT R20, R4, 0x7610, R20"),
            (0x130, "IMAD.U32 R21, R5, 0x10000, RZ"),
            (0x140, "@!P2 BRA 0x170"),
            (0x150, "LDG.E.128 R4, desc[UR4][R2.64+0x2000]"),
            (0x160, "PRMT R22, R4, 0x7610, R22"),
            (0x170, "EXIT"),
        ]
        self.assertEqual(sass_loads.waits(self.kernel(body)), [0x110])

    def test_twins_reports_bf16_waiting_more_than_fp16(self):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"sass_loads_{os.getpid()}.sass")
        with open(path, "w") as f:
            f.write("\n".join(listing(BF16, SPLIT) + listing(F16, TOGETHER)) + "\n")
        try:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                sass_loads.main(["--twins", path])
        finally:
            os.remove(path)
        lines = out.getvalue().splitlines()
        self.assertIn("gn_fwd_bf16_bf16_cl_swish_stream_b512_v8_e1", lines[0])
        self.assertTrue(lines[0].lstrip().startswith("1 of   2 16-byte loads wait"), lines[0])
        self.assertTrue(lines[-1].startswith("1 of 2 kernels"), lines[-1])


if __name__ == "__main__":
    unittest.main()
