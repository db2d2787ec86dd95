package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"
	"unicode"
)

// barChart is a grouped bar chart: one group per X label, one bar per
// series in each group. Hatched bars are projections.
type barChart struct {
	Title  string
	YLabel string
	Log    bool
	Groups []string
	Series []series
}

type series struct {
	Name      string
	Values    []float64 // one per group; 0 means none
	Projected []bool
}

var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff}, {0x39, 0x3b, 0x79, 0xff}, {0x63, 0x79, 0x39, 0xff},
}

const (
	scale2  = 2 // pixels per font dot
	charW   = 6 * scale2
	lineH   = 9 * scale2
	chartW  = 1100
	plotTop = 60
	plotH   = 420
	plotL   = 110
)

// writePNG draws the chart to path.
func (c *barChart) writePNG(path string) error {
	legendRows := (len(c.Series) + 2) / 3
	h := plotTop + plotH + 60 + legendRows*lineH + 20
	img := image.NewRGBA(image.Rect(0, 0, chartW, h))
	fill(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})
	ink := color.RGBA{0x20, 0x20, 0x20, 0xff}
	grid := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	text(img, 20, 16, c.Title, ink)
	text(img, 20, plotTop-lineH-4, c.YLabel, ink)

	lo, hi := c.bounds()
	plotR := chartW - 30
	y := func(v float64) int {
		f := v / hi
		if c.Log {
			f = (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		}
		return plotTop + plotH - int(math.Round(f*plotH))
	}
	for _, t := range c.ticks(lo, hi) {
		yy := y(t)
		fill(img, image.Rect(plotL, yy, plotR, yy+1), grid)
		label := trimFloat(t)
		text(img, plotL-8-len(label)*charW, yy-7, label, ink)
	}
	fill(img, image.Rect(plotL, plotTop, plotL+1, plotTop+plotH+1), ink)
	fill(img, image.Rect(plotL, plotTop+plotH, plotR, plotTop+plotH+1), ink)

	groupW := (plotR - plotL) / max(len(c.Groups), 1)
	barW := max((groupW-30)/max(len(c.Series), 1), 2)
	for g, name := range c.Groups {
		x0 := plotL + g*groupW + 15
		for s, ser := range c.Series {
			if g >= len(ser.Values) || ser.Values[g] <= 0 {
				continue
			}
			col := palette[s%len(palette)]
			r := image.Rect(x0+s*barW, y(math.Max(ser.Values[g], lo)), x0+(s+1)*barW-2, plotTop+plotH)
			if g < len(ser.Projected) && ser.Projected[g] {
				hatch(img, r, col)
			} else {
				fill(img, r, col)
			}
		}
		text(img, plotL+g*groupW+groupW/2-len(name)*charW/2, plotTop+plotH+12, name, ink)
	}
	// Legend: three columns.
	ly := plotTop + plotH + 50
	for s, ser := range c.Series {
		x := 20 + (s%3)*360
		yy := ly + (s/3)*lineH
		fill(img, image.Rect(x, yy, x+24, yy+14), palette[s%len(palette)])
		text(img, x+32, yy, abbrev(ser.Name, 26), ink)
	}
	if c.anyProjected() {
		text(img, chartW-20-len("hatched: projected")*charW, 16, "hatched: projected", ink)
	}

	return writeAtomic(path, func(w io.Writer) error { return png.Encode(w, img) })
}

// bounds is the value range of the Y axis.
func (c *barChart) bounds() (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi == 0 {
		return 0.1, 1
	}
	if c.Log {
		return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
	}
	step := niceStep(hi / 5)
	return 0, math.Ceil(hi*1.05/step) * step
}

func (c *barChart) ticks(lo, hi float64) []float64 {
	var out []float64
	if c.Log {
		for v := lo; v <= hi*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	step := niceStep(hi / 5)
	for v := 0.0; v <= hi*1.0001; v += step {
		out = append(out, v)
	}
	return out
}

func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// hatch draws a bar's outline and diagonal stripes.
func hatch(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if x < r.Min.X+2 || x >= r.Max.X-2 || y < r.Min.Y+2 || (x+y)%8 < 3 {
				img.SetRGBA(x, y, c)
			}
		}
	}
}

// text draws s with the 5x7 font, top-left at (x, y).
func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, ch := range s {
		g, ok := glyphs[unicode.ToUpper(ch)]
		if !ok {
			g = glyphs[' ']
		}
		for i := 0; i < 35; i++ {
			if g[i] == '#' {
				px, py := x+(i%5)*scale2, y+(i/5)*scale2
				fill(img, image.Rect(px, py, px+scale2, py+scale2), c)
			}
		}
		x += charW
	}
}

func (c *barChart) anyProjected() bool {
	for _, s := range c.Series {
		for _, p := range s.Projected {
			if p {
				return true
			}
		}
	}
	return false
}
