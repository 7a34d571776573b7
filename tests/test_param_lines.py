"""bench/param_lines.py on the opening of a real listing: the channels-first onchip forward 128 x 8 x 1
(H200, before the parameters' lines were reordered), whose wavefronts waited on two line misses
before x's load (bench/NOTES.md, "The parameters' lines")."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import param_lines  # noqa: E402
import sass_loads  # noqa: E402

KERNEL = "_ZN5hipgn7kernels17fwd_onchip_kernelINS_9generated41gn_fwd_f16_f16_cf_swish_onchip_b128_v8_e1EEEvNS_6ParamsE"
OPENING = [
    "LDC R1, c[0x0][0x28]",
    "S2R R2, SR_TID.X",
    "ULDC.64 UR10, c[0x0][0x258]",
    "ULDC.64 UR4, c[0x0][0x250]",
    "ULDC.64 UR8, c[0x0][0x208]",
    "LDC R17, c[0x0][0x278]",
    "ISETP.GE.U32.AND P0, PT, R2, UR10, PT",
    "LDG.E.128 R8, desc[UR8][R8.64]",
    "ULDC UR6, c[0x0][0x0]",
    "@P1 LDC R19, c[0x0][0x27c]",
    "ULDC.64 UR6, c[0x0][0x280]",
    "EXIT",
]


def listing():
    lines = [f"\t\tFunction : {KERNEL}"]
    for i, text in enumerate(OPENING):
        lines.append(f"        /*{16 * i:04x}*/                   {text} ;   /* 0x000fe20000000f00 */")
    return lines


class Lines(unittest.TestCase):
    def test_blocking_lines_before_the_first_load(self):
        before, every = param_lines.lines(sass_loads.parse(listing())[KERNEL])
        # 0x258 and 0x250 share a line; 0x278's LDC does not hold the wavefront; 0x0 and 0x28 are the driver's
        self.assertEqual(before, [0x240, 0x200])
        self.assertEqual(every, [0x240, 0x200, 0x280])


if __name__ == "__main__":
    unittest.main()
