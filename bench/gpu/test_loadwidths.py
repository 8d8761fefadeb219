"""Tests of loadwidths.py; run from bench/gpu with ``python3 -m unittest
test_loadwidths``. They feed it a synthetic .cu and nvdisasm listing: a
kernel with one 16-byte and one 4-byte load of its own that calls a stage
function, with two 16-byte loads and a 2-byte one (and a cp.async
commit, LDGDEPBAR, which is not a load), three times, and a second
kernel that calls it once, with its own copy of the function."""

import unittest

import loadwidths

CU = """
static __device__ __noinline__ void s_proj(const float* w, float* y) {
}
static __global__ void __launch_bounds__(256)
k_main(const float* w, float* y) {
  // Stage proj.
  s_proj(w, y);
  s_proj(w + 16, y);
  s_proj(w + 32, y);
}
static __global__ void __launch_bounds__(256)
k_tail(const float* w, float* y) {
  s_proj(w, y);
}
"""

SASS = """
        .text._Z6k_mainPKfPf:
_Z6k_mainPKfPf:
        /*0000*/                   LDG.E.128 R4, [R2.64] ;
.L_x_0:
        /*0010*/                   LDG.E R8, [R2.64] ;
        /*0020*/                   CALL.REL.NOINC `($_Z6k_mainPKfPf$_ZN39_INTERNAL_10dc7950_9_decode_cu_66afa4526s_projEPKfPf) ;
$_Z6k_mainPKfPf$_ZN39_INTERNAL_10dc7950_9_decode_cu_66afa4526s_projEPKfPf:
        /*0030*/                   LDG.E.128.CONSTANT R4, [R2.64] ;
        /*0040*/                   LDG.E.128 R8, [R2.64+0x10] ;
        /*0050*/                   LDG.E.U16 R12, [R2.64] ;
        /*0058*/                   LDGDEPBAR ;
        /*0060*/                   RET.REL.NODEC R20 `(_Z6k_mainPKfPf) ;
_Z6k_tailPKfPf:
        /*0000*/                   CALL.REL.NOINC `($_Z6k_tailPKfPf$_ZN39_INTERNAL_10dc7950_9_decode_cu_66afa4526s_projEPKfPf) ;
$_Z6k_tailPKfPf$_ZN39_INTERNAL_10dc7950_9_decode_cu_66afa4526s_projEPKfPf:
        /*0010*/                   LDG.E.128.CONSTANT R4, [R2.64] ;
        /*0020*/                   LDG.E.128 R8, [R2.64+0x10] ;
        /*0030*/                   LDG.E.U16 R12, [R2.64] ;
"""


class CountTest(unittest.TestCase):
    def test_count(self):
        flat, weighted = loadwidths.count(CU, SASS)
        # The cubin: 5 of 8 loads are 16-byte.
        self.assertEqual(flat, (5, 8))
        # As the stages run: k_main's 1 of 2 and its copy of the
        # function's 2 of 3 three times; k_tail's copy once.
        self.assertEqual(weighted, (1 + 3 * 2 + 2, 2 + 3 * 3 + 3))

    def test_stage_name(self):
        names = {"s_proj", "s_proj_2"}
        self.assertEqual(loadwidths.stage_name("_ZN4_cu_6s_projEPKf", names), "s_proj")
        self.assertEqual(loadwidths.stage_name("_ZN4_cu_8s_proj_2EPKf", names), "s_proj_2")
        self.assertIsNone(loadwidths.stage_name("_Z6k_mainPKfPf", names))


if __name__ == "__main__":
    unittest.main()
