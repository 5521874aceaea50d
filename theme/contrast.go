package theme

import (
	"image/color"
	"math"
)

// Contrast is the WCAG 2 contrast ratio of two colours, from 1 (none) to
// 21 (black on white). Text wants at least 4.5 (MinContrast).
func Contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// MinContrast is the least contrast any text of a theme has against its
// background (WCAG AA for normal text).
const MinContrast = 4.5

func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		s := float64(v) / 0xffff
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}
