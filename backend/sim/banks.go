package sim

import "tec/backend/kir"

// This file counts the shared-memory wavefronts and bank conflicts of the
// warp-level shared-memory accesses, by kir.Banks's rule, for each shared
// array of a block.

// countShared counts the wavefronts of an access by the active lanes act
// (in ascending order) to the elements ix[lane] of shared array slot, of
// elements of size bytes each, width elements per lane (a 16-byte vector
// access of VecLen elements, or 1).
func (b *block) countShared(slot int, act []int32, ix []float64, size, width int) {
	c := &b.banks[slot]
	bytes := size * width
	per := int32(kir.PhaseLanes(bytes))
	var ph kir.BankPhase
	cur := int32(-1)
	for _, l := range act {
		if q := l / per; q != cur {
			ph.Flush(c)
			cur = q
		}
		ph.Add(int64(ix[l])*int64(size), int64(bytes))
	}
	ph.Flush(c)
}

// countLdMatrix counts the wavefronts of an LdMatrix of num matrices from
// shared array slot by the warp of lanes base to base+31, whose row
// addresses are ix[base+r] (16 bytes of 2-byte elements each): one phase
// per matrix.
func (b *block) countLdMatrix(slot, base, num int, ix []float64) {
	c := &b.banks[slot]
	var ph kir.BankPhase
	for j := range num {
		for r := range 8 {
			ph.Add(int64(ix[base+8*j+r])*2, kir.VecBytes)
		}
		ph.Flush(c)
	}
}

// addBanks adds the block's counts, by shared array, to st.
func (st *KernelStats) addBanks(k *kir.Kernel, bs []kir.Banks) {
	for i, c := range bs {
		if c == (kir.Banks{}) {
			continue
		}
		if st.ArrayBanks == nil {
			st.ArrayBanks = map[string]kir.Banks{}
		}
		a := st.ArrayBanks[k.Shared[i].Name]
		a.Add(c)
		st.ArrayBanks[k.Shared[i].Name] = a
		st.Banks.Add(c)
	}
}
