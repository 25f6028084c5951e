package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/ringactor/ringactor/kernels"
)

// The user op this example registers: a 2-D Gaussian blur of one image.
// A message is an image: its width and height as floats, then its pixels
// row by row (float32); the result is the blurred image with the same
// header. The kernel is (2*radius+1)² weights, given as the stage's
// Params (row by row), so the device never computes a Gaussian itself
// (expf differs between CUDA, the host's libm and Go in the last bits).
// Borders clamp to the edge: a tap outside the image reads the nearest
// pixel inside it.
const (
	opName = "imagebatch.blur"
	radius = 2
	taps   = 2*radius + 1
	header = 2 // floats before the pixels: width, height
	// maxSide bounds an image's width and height: a side up to 65536 is
	// what the op takes (its header check), the example's -size is
	// smaller still (maxSize).
	maxSide = 65536
)

// errNotAnImage: a message whose header does not describe its payload.
var errNotAnImage = errors.New("imagebatch: message is not an image (width, height, then width*height pixels)")

// blurOp is the op as registered: the Go reference, which the sim backend
// runs and the host checks every result against, and the CUDA source,
// which the CUDA backend compiles with NVRTC for a GPU and the emulated
// driver with the host's C++ compiler.
var blurOp = kernels.Op{Name: opName, Params: taps * taps, Go: blur, CUDA: blurCUDA}

// blur is the Go reference. Every product is rounded to float32 before it
// is added (the conversion forbids Go to fuse it into an FMA), and the
// taps are summed in the same order as the CUDA side, so both give the
// same floats, bit for bit.
func blur(w, _, in, out []float32) (int, error) {
	if len(w) != taps*taps {
		return 0, fmt.Errorf("imagebatch: %d weights, want %d", len(w), taps*taps)
	}
	width, height, ok := dims(in)
	if !ok {
		return 0, errNotAnImage
	}
	if len(out) < len(in) {
		return 0, kernels.ErrOutputTooSmall
	}
	out[0], out[1] = in[0], in[1]
	px, dst := in[header:], out[header:]
	for y := range height {
		for x := range width {
			var acc float32
			for dy := -radius; dy <= radius; dy++ {
				yy := min(max(y+dy, 0), height-1)
				for dx := -radius; dx <= radius; dx++ {
					xx := min(max(x+dx, 0), width-1)
					acc += float32(w[(dy+radius)*taps+dx+radius] * px[yy*width+xx])
				}
			}
			dst[y*width+x] = acc
		}
	}
	return len(in), nil
}

// dims reads an image's header: whole numbers from 1 to maxSide whose
// product is the number of pixels that follow.
func dims(in []float32) (w, h int, ok bool) {
	if len(in) < header {
		return 0, 0, false
	}
	for _, f := range in[:header] {
		if !(f >= 1 && f <= maxSide) || f != float32(math.Floor(float64(f))) {
			return 0, 0, false
		}
	}
	w, h = int(in[0]), int(in[1])
	return w, h, w*h == len(in)-header
}

// blurCUDA is the stage on the device, a RA_STAGE function: the device
// loop calls it on one thread per message (a block's threads take a
// batch's messages side by side), so one thread blurs a whole image, in
// the reference's order. __fmul_rn and __fadd_rn round each product and
// sum on their own: the CUDA compiler never contracts them into an FMA,
// which it may do to a*b+c. The emulated driver's host build has no such
// intrinsics; there the product is returned from a function that is not
// inlined, so no compiler can fuse it with the sum either.
var blurCUDA = `#include "ringactor.cuh"

#if defined(RA_HOST)
static __attribute__((noinline)) float blur_mul(float a, float b) { return a * b; }
static __attribute__((noinline)) float blur_add(float a, float b) { return a + b; }
#else
static __device__ __forceinline__ float blur_mul(float a, float b) { return __fmul_rn(a, b); }
static __device__ __forceinline__ float blur_add(float a, float b) { return __fadd_rn(a, b); }
#endif

#define BLUR_R ` + fmt.Sprint(radius) + `
#define BLUR_TAPS (2 * BLUR_R + 1)
#define BLUR_HEADER ` + fmt.Sprint(header) + `
#define BLUR_MAX_SIDE ` + fmt.Sprint(maxSide) + `.0f

// params: the BLUR_TAPS x BLUR_TAPS weights, row by row. in: width,
// height, then width*height pixels; out: the same header, then the
// blurred pixels. Borders clamp to the edge.
RA_STAGE(` + kernels.Symbol(opName) + `) {
    if (n < BLUR_HEADER) return RA_STAGE_ERR_DOMAIN;
    for (int k = 0; k < BLUR_HEADER; k++)
        if (!(in[k] >= 1.0f && in[k] <= BLUR_MAX_SIDE) || in[k] != floorf(in[k])) return RA_STAGE_ERR_DOMAIN;
    const int w = (int)in[0], h = (int)in[1];
    if ((long long)w * h != (long long)n - BLUR_HEADER) return RA_STAGE_ERR_DOMAIN;
    if (out_cap < n) return RA_STAGE_ERR_OUTPUT_TOO_SMALL;
    out[0] = in[0];
    out[1] = in[1];
    const float *px = in + BLUR_HEADER;
    float *dst = out + BLUR_HEADER;
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            float acc = 0.0f;
            for (int dy = -BLUR_R; dy <= BLUR_R; dy++) {
                const int yy = min(max(y + dy, 0), h - 1);
                for (int dx = -BLUR_R; dx <= BLUR_R; dx++) {
                    const int xx = min(max(x + dx, 0), w - 1);
                    acc = blur_add(acc, blur_mul(params[(dy + BLUR_R) * BLUR_TAPS + dx + BLUR_R], px[yy * w + xx]));
                }
            }
            dst[y * w + x] = acc;
        }
    }
    return n;
}
`

// gaussian is the blur's weights for sigma: exp(-(x²+y²)/(2σ²)) over the
// taps, normalized to sum to 1 (in float64), each rounded to float32. The
// host computes them once; they travel as the stage's Params.
func gaussian(sigma float64) []float32 {
	g := make([]float64, taps)
	sum := 0.0
	for i := range g {
		d := float64(i - radius)
		g[i] = math.Exp(-d * d / (2 * sigma * sigma))
		sum += g[i]
	}
	w := make([]float32, taps*taps)
	for i := range taps {
		for j := range taps {
			w[i*taps+j] = float32(g[i] / sum * g[j] / sum)
		}
	}
	return w
}
