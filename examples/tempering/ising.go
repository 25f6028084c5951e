package main

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/ringactor/ringactor/kernels"
)

// The user op metropolis: a replica's 2-D Ising model (L×L spins ±1,
// periodic, J = 1) in its stage's state, advanced by Metropolis sweeps.
//
//	params: [L]
//	state:  [initialised, s_0 .. s_{L·L-1}] (zero at launch: the first
//	        message draws the spins from its seed, a hot start)
//	in:     [p4, p8, seed, sweeps]: p4 and p8 are exp(-4β) and exp(-8β),
//	        the acceptance of a flip that raises the energy by 4 or 8,
//	        computed on the host in float32 (the device computes no exp);
//	        seed (a whole number below 2^24) keys the random numbers;
//	        sweeps is how many sweeps to run
//	out:    [E, M, flips]: the energy -Σ s_i s_j over the bonds, the
//	        magnetisation Σ s_i and the flips accepted, whole numbers
//
// A sweep visits the sites in order (one thread; a stateful stage runs
// its messages one at a time). Site i of sweep k draws u = (h >> 8)·2^-24
// from h = mix(seed·0x9E3779B1 + mix(k·L·L + i)) (mix: murmur3's
// finalizer) and flips when the energy change dE ≤ 0 or u < p_dE. Every
// step is integer arithmetic or an exact float32 compare, so the Go
// reference (on sim) and the CUDA source (on a GPU or the emulated
// driver) give the same bits.

// opName is the op's registered name.
const opName = "tempering.metropolis"

// maxSize is the largest L: the state holds maxSize² spins.
const maxSize = 64

const stateFloats = 1 + maxSize*maxSize

var registerOnce struct {
	sync.Once
	err error
}

// register registers the op once per process.
func register() error {
	registerOnce.Do(func() {
		registerOnce.err = kernels.Register(kernels.Op{
			Name: opName, Params: 1, StateFloats: stateFloats,
			Go:   metropolis,
			CUDA: metropolisCUDA,
		})
	})
	return registerOnce.err
}

var errBadMessage = errors.New("metropolis: bad message")

// mix is murmur3's 32-bit finalizer.
func mix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// draw is the random word of counter ctr under seed.
func draw(seed, ctr uint32) uint32 { return mix(seed*0x9E3779B1 + mix(ctr)) }

// metropolis is the op's Go reference (kernels.GoFunc).
func metropolis(params, state, in, out []float32) (int, error) {
	if len(out) < 3 {
		return 0, kernels.ErrOutputTooSmall
	}
	if len(params) < 1 || len(in) != 4 {
		return 0, fmt.Errorf("%w: %d params, %d floats in (want [L] and [p4, p8, seed, sweeps])", errBadMessage, len(params), len(in))
	}
	L := int(params[0])
	if float32(L) != params[0] || L < 3 || L > maxSize || len(state) < 1+L*L {
		return 0, fmt.Errorf("%w: L %v (want 3 to %d)", errBadMessage, params[0], maxSize)
	}
	p4, p8, seedF, sweepsF := in[0], in[1], in[2], in[3]
	seed, sweeps := uint32(seedF), int(sweepsF)
	if seedF < 0 || seedF >= 1<<24 || float32(seed) != seedF || sweepsF < 0 || float32(sweeps) != sweepsF || sweeps*L*L >= 1<<24 {
		return 0, fmt.Errorf("%w: seed %v, sweeps %v", errBadMessage, seedF, sweepsF)
	}
	n := L * L
	s := state[1 : 1+n]
	if state[0] == 0 { // a hot start from the first message's seed
		for i := range s {
			s[i] = -1
			if draw(seed, ^uint32(i))&1 == 1 {
				s[i] = 1
			}
		}
		state[0] = 1
	}
	flips := 0
	for k := 0; k < sweeps; k++ {
		for i := 0; i < n; i++ {
			x, y := i%L, i/L
			nb := s[y*L+(x+1)%L] + s[y*L+(x+L-1)%L] + s[((y+1)%L)*L+x] + s[((y+L-1)%L)*L+x]
			dE := int(2 * s[i] * nb) // -8, -4, 0, 4 or 8
			u := float32(draw(seed, uint32(k*n+i))>>8) * (1.0 / (1 << 24))
			if dE <= 0 || (dE == 4 && u < p4) || (dE == 8 && u < p8) {
				s[i] = -s[i]
				flips++
			}
		}
	}
	var e, m float32
	for i := 0; i < n; i++ {
		x, y := i%L, i/L
		e -= s[i] * (s[y*L+(x+1)%L] + s[((y+1)%L)*L+x])
		m += s[i]
	}
	out[0], out[1], out[2] = e, m, float32(flips)
	return 3, nil
}

// metropolisCUDA is the op's device function: the same steps.
var metropolisCUDA = `#include "ringactor.cuh"
__device__ __forceinline__ unsigned temper_mix(unsigned h) {
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
    return h;
}
__device__ __forceinline__ unsigned temper_draw(unsigned seed, unsigned ctr) {
    return temper_mix(seed * 0x9E3779B1u + temper_mix(ctr));
}
RA_STAGE(` + kernels.Symbol(opName) + `) {
    if (out_cap < 3) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    int L = (int)params[0];
    if (n != 4 || (float)L != params[0] || L < 3 || L > ` + fmt.Sprint(maxSize) + `) return RA_STAGE_ERR_DOMAIN;
    float p4 = in[0], p8 = in[1], seedf = in[2], sweepsf = in[3];
    if (!(seedf >= 0.0f && seedf < 16777216.0f) || !(sweepsf >= 0.0f && sweepsf < 16777216.0f)) return RA_STAGE_ERR_DOMAIN;
    unsigned seed = (unsigned)seedf;
    int sweeps = (int)sweepsf;
    int N = L * L;
    if ((float)seed != seedf || (float)sweeps != sweepsf || (long long)sweeps * N >= 16777216LL) return RA_STAGE_ERR_DOMAIN;
    float *s = state + 1;
    if (state[0] == 0.0f) {
        for (int i = 0; i < N; i++) s[i] = (temper_draw(seed, ~(unsigned)i) & 1u) ? 1.0f : -1.0f;
        state[0] = 1.0f;
    }
    int flips = 0;
    for (int k = 0; k < sweeps; k++) {
        for (int i = 0; i < N; i++) {
            int x = i % L, y = i / L;
            float nb = s[y * L + (x + 1) % L] + s[y * L + (x + L - 1) % L] + s[((y + 1) % L) * L + x] + s[((y + L - 1) % L) * L + x];
            int dE = (int)(2.0f * s[i] * nb);
            float u = (float)(temper_draw(seed, (unsigned)(k * N + i)) >> 8) * (1.0f / 16777216.0f);
            if (dE <= 0 || (dE == 4 && u < p4) || (dE == 8 && u < p8)) {
                s[i] = -s[i];
                flips++;
            }
        }
    }
    float e = 0.0f, m = 0.0f;
    for (int i = 0; i < N; i++) {
        int x = i % L, y = i / L;
        e -= s[i] * (s[y * L + (x + 1) % L] + s[((y + 1) % L) * L + x]);
        m += s[i];
    }
    out[0] = e;
    out[1] = m;
    out[2] = (float)flips;
    return 3;
}
`

// acceptance is the table a message carries for β: exp(-4β) and
// exp(-8β) in float32, computed once on the host.
func acceptance(beta float64) (p4, p8 float32) {
	return float32(math.Exp(-4 * beta)), float32(math.Exp(-8 * beta))
}
