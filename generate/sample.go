package generate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Sampling says how a generation picks each token from a run's logits,
// as Hugging Face's sampling does: the logits divided by the temperature,
// then top-k, then top-p (nucleus), then a softmax and a draw. The zero
// Sampling is greedy: each model's next, its own argmax.
//
// The draw is made on the host, in float64, the same on every device for
// the same logits: token k of sequence b (k = 0 is the prefill's, k = i+1
// decode step i's) draws the uniform Uniform(b, k) from a generator
// seeded by Seed, b and k alone, so that a sequence draws the same
// whatever the batch it runs in, and picks by inverse CDF (Pick) from the
// filtered distribution (Probs).
type Sampling struct {
	// Temperature divides the logits; 0 is greedy (the model's next),
	// and the filters below then have no effect.
	Temperature float64 `json:"temperature"`
	// TopK keeps the K greatest logits, and every logit equal to the Kth
	// (as torch.topk and Hugging Face's TopKLogitsWarper do); 0 keeps
	// all.
	TopK int `json:"top_k"`
	// TopP keeps the smallest set of most probable tokens whose
	// probabilities sum to TopP or more (Hugging Face's
	// TopPLogitsWarper), and always the most probable; in (0, 1], 1
	// keeps all. 0, the zero value, is taken as 1.
	TopP float64 `json:"top_p"`
	// Seed seeds the draws.
	Seed uint64 `json:"seed"`
}

// Greedy reports whether s picks the model's next token (temperature 0)
// rather than drawing one.
func (s Sampling) Greedy() bool { return s.Temperature == 0 }

// Check reports a Sampling that means nothing: a negative, infinite or
// NaN temperature, a negative top-k, a top-p outside (0, 1] (the zero
// value aside).
func (s Sampling) Check() error {
	switch {
	case s.Temperature < 0 || math.IsNaN(s.Temperature) || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("temperature %v: want 0 (greedy) or a positive number", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("top-k %d: want 0 (off) or a positive count of tokens", s.TopK)
	case !(s.TopP >= 0 && s.TopP <= 1):
		return fmt.Errorf("top-p %v: want a probability in (0, 1] (1: off)", s.TopP)
	}
	return nil
}

// topP returns s's top-p, 1 for the zero value.
func (s Sampling) topP() float64 {
	if s.TopP == 0 {
		return 1
	}
	return s.TopP
}

// Uniform returns the uniform number in [0, 1) that token k of sequence
// seq draws with: x >> 11 divided by 2^53, x the first Uint64 of
// math/rand/v2's PCG seeded NewPCG(Seed, seq<<32 | k) (seq and k below
// 2^32). It depends on Seed, seq and k alone, and python/hf_sampling.py
// derives it the same way.
func (s Sampling) Uniform(seq, k int) float64 {
	pcg := rand.NewPCG(s.Seed, uint64(seq)<<32|uint64(uint32(k)))
	return float64(pcg.Uint64()>>11) / (1 << 53)
}

// RowError is a row of logits that no token can be drawn from: a NaN, a
// +Inf (an overflow), or nothing but -Inf (every token masked).
type RowError struct {
	// What says what the row holds; At is the first such position, or -1.
	What string
	At   int
}

func (e *RowError) Error() string {
	if e.At < 0 {
		return "the logits " + e.What
	}
	return fmt.Sprintf("the logits hold %s (the first at token %d)", e.What, e.At)
}

// checkRow returns the error of a row that nothing can be drawn from.
func checkRow(logits []float64) error {
	ninf := 0
	for t, x := range logits {
		switch {
		case math.IsNaN(x):
			return &RowError{What: "a NaN", At: t}
		case math.IsInf(x, 1):
			return &RowError{What: "a +Inf", At: t}
		case math.IsInf(x, -1):
			ninf++
		}
	}
	if ninf == len(logits) {
		return &RowError{What: fmt.Sprintf("are all -Inf (%d values): every token is masked", len(logits)), At: -1}
	}
	return nil
}

// Argmax returns the position of the first greatest of logits, as the
// models' argmax picks it (the lowest position among equals).
func Argmax(logits []float64) int {
	best := 0
	for t, x := range logits {
		if x > logits[best] {
			best = t
		}
	}
	return best
}

// Probs returns the distribution that s draws a token from, given one
// sequence's logits: zero for each token the filters remove, the softmax
// of the logits divided by the temperature over the others. Greedy, it
// is 1 at Argmax(logits). In float64:
//
//   - top-k (0 < TopK < V) removes the tokens whose logit is below the
//     TopK-th greatest (counted with repeats);
//   - top-p (TopP < 1) orders the tokens left by logit, ascending, equal
//     logits the higher position first, and removes those at whose
//     cumulative probability (the softmax over the tokens top-k left) is
//     at most 1 - TopP, keeping the last, the most probable;
//   - the probability of a token left is exp((l - m) / T) over the sum
//     of those of every token left, m the greatest logit, summed in
//     position order.
//
// A row that holds a NaN or a +Inf, or nothing but -Inf, is a *RowError.
func (s Sampling) Probs(logits []float64) ([]float64, error) {
	if err := checkRow(logits); err != nil {
		return nil, err
	}
	p := make([]float64, len(logits))
	if s.Greedy() {
		p[Argmax(logits)] = 1
		return p, nil
	}
	m := logits[Argmax(logits)]
	keep := make([]bool, len(logits))
	for t, x := range logits {
		keep[t] = !math.IsInf(x, -1)
	}
	if k := s.TopK; k > 0 && k < len(logits) {
		sorted := slices.Clone(logits)
		slices.SortFunc(sorted, func(a, b float64) int { return cmp.Compare(b, a) })
		kth := sorted[k-1]
		for t, x := range logits {
			if x < kth {
				keep[t] = false
			}
		}
	}
	weight := func(t int) float64 {
		if !keep[t] {
			return 0
		}
		return math.Exp((logits[t] - m) / s.Temperature)
	}
	if top := s.topP(); top < 1 {
		order := make([]int, len(logits))
		for t := range order {
			order[t] = t
		}
		slices.SortFunc(order, func(a, b int) int {
			if c := cmp.Compare(logits[a], logits[b]); c != 0 {
				return c
			}
			return cmp.Compare(b, a) // the higher position first
		})
		sum := 0.0
		for t := range logits {
			sum += weight(t)
		}
		cum := 0.0
		for _, t := range order[:len(order)-1] {
			cum += weight(t) / sum
			if cum <= 1-top {
				keep[t] = false
			}
		}
	}
	sum := 0.0
	for t := range logits {
		p[t] = weight(t)
		sum += p[t]
	}
	for t := range p {
		p[t] /= sum
	}
	return p, nil
}

// Pick returns the token that the uniform u in [0, 1) draws from the
// distribution probs by inverse CDF: the first token, in position order,
// of nonzero probability whose cumulative probability exceeds u (the
// last such token if rounding leaves u beyond them all).
func Pick(probs []float64, u float64) int {
	cum, last := 0.0, -1
	for t, p := range probs {
		if p <= 0 {
			continue
		}
		cum += p
		last = t
		if u < cum {
			return t
		}
	}
	return last
}

// Sample returns token k of sequence seq drawn from its logits:
// Pick(Probs(logits), Uniform(seq, k)), or Argmax(logits) when greedy.
func (s Sampling) Sample(logits []float64, seq, k int) (int, error) {
	p, err := s.Probs(logits)
	if err != nil {
		return 0, err
	}
	if s.Greedy() {
		return Argmax(logits), nil
	}
	return Pick(p, s.Uniform(seq, k)), nil
}

// String describes s for a message: "greedy", or its temperature and the
// filters that are on.
func (s Sampling) String() string {
	if s.Greedy() {
		return "greedy"
	}
	out := fmt.Sprintf("temperature %v", s.Temperature)
	if s.TopK > 0 {
		out += fmt.Sprintf(", top-k %d", s.TopK)
	}
	if s.topP() < 1 {
		out += fmt.Sprintf(", top-p %v", s.TopP)
	}
	return out + fmt.Sprintf(", seed %d", s.Seed)
}
