package ocr

import (
	"image"
	"slices"
)

// Clean returns a cleaned copy of a scanned page for the second pass: a 3x3 median filter
// (removes isolated speckles, keeps strokes two pixels or wider), then Otsu's global
// threshold (N. Otsu, IEEE SMC 9(1), 1979) to black and white. Memory: two images of the
// page's size.
func Clean(img *image.Gray) *image.Gray {
	return Binarise(Median3(img))
}

// Median3 returns img filtered by the median of each pixel's 3x3 neighbourhood (edges
// clamped).
func Median3(img *image.Gray) *image.Gray {
	b := img.Bounds()
	out := image.NewGray(b)
	var win [9]uint8
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			k := 0
			for dy := -1; dy <= 1; dy++ {
				yy := min(max(y+dy, b.Min.Y), b.Max.Y-1)
				row := img.PixOffset(b.Min.X, yy) - b.Min.X
				for dx := -1; dx <= 1; dx++ {
					xx := min(max(x+dx, b.Min.X), b.Max.X-1)
					win[k] = img.Pix[row+xx]
					k++
				}
			}
			s := win
			slices.Sort(s[:])
			out.Pix[out.PixOffset(x, y)] = s[4]
		}
	}
	return out
}

// OtsuThreshold returns the grey level t that maximises the between-class variance of
// the pixels <= t and > t.
func OtsuThreshold(img *image.Gray) uint8 {
	var hist [256]int
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		i := img.PixOffset(b.Min.X, y)
		for _, v := range img.Pix[i : i+b.Dx()] {
			hist[v]++
		}
	}
	total := b.Dx() * b.Dy()
	sumAll := 0.0
	for i, n := range hist {
		sumAll += float64(i * n)
	}
	var wB, sumB, best float64
	t := uint8(127)
	for i, n := range hist {
		wB += float64(n)
		if wB == 0 {
			continue
		}
		wF := float64(total) - wB
		if wF == 0 {
			break
		}
		sumB += float64(i * n)
		mB, mF := sumB/wB, (sumAll-sumB)/wF
		if v := wB * wF * (mB - mF) * (mB - mF); v > best {
			best, t = v, uint8(i)
		}
	}
	return t
}

// Binarise returns img in black (0) and white (255) at Otsu's threshold.
func Binarise(img *image.Gray) *image.Gray {
	t := OtsuThreshold(img)
	b := img.Bounds()
	out := image.NewGray(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		src, dst := img.Pix[img.PixOffset(b.Min.X, y):][:b.Dx()], out.Pix[out.PixOffset(b.Min.X, y):][:b.Dx()]
		for i, v := range src {
			if v > t {
				dst[i] = 255
			}
		}
	}
	return out
}
