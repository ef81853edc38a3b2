package results

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A frame carries an encoded Set through a container log as text lines:
//
//	ragops-results begin bytes=<n> sha256=<hex> lines=<m>
//	ragops-results <i> <base64, at most FrameLineChars characters>   (i = 1..m)
//	ragops-results end sha256=<hex>
//
// Each line is short (under the 16 KiB at which container runtimes split log lines) and
// starts with the marker, so log lines interleaved from elsewhere are skipped. The payload's
// length and SHA-256 are also put in the pod's termination message (plan.EvaluateResult),
// so the collector checks that the frame it reads is that of the run that just ended.
const (
	frameMarker = "ragops-results"
	// FrameLineChars is the base64 payload per line.
	FrameLineChars = 3072
)

// WriteFrame writes blob as a frame to w.
func WriteFrame(w io.Writer, blob []byte) error {
	sum := sha256.Sum256(blob)
	hexSum := hex.EncodeToString(sum[:])
	enc := base64.StdEncoding.EncodeToString(blob)
	lines := (len(enc) + FrameLineChars - 1) / FrameLineChars
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s begin bytes=%d sha256=%s lines=%d\n", frameMarker, len(blob), hexSum, lines)
	for i := range lines {
		end := min(len(enc), (i+1)*FrameLineChars)
		fmt.Fprintf(bw, "%s %d %s\n", frameMarker, i+1, enc[i*FrameLineChars:end])
	}
	fmt.Fprintf(bw, "%s end sha256=%s\n", frameMarker, hexSum)
	return bw.Flush()
}

// ErrNoFrame is returned by ReadFrame when the log holds no complete frame.
var ErrNoFrame = errors.New("results: no complete per-query results frame in the log")

// ReadFrame returns the payload of the last complete frame in r whose SHA-256 is wantSHA256
// (any frame when empty). Errors: ErrNoFrame; a frame whose lines are out of order, whose
// length or checksum does not match its header (a log cut by rotation), or unreadable input.
func ReadFrame(r io.Reader, wantSHA256 string) ([]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var (
		found     []byte
		inFrame   bool
		hdrBytes  int
		hdrSum    string
		hdrLines  int
		next      int
		payload   strings.Builder
		lastError error
	)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), frameMarker+" ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		switch {
		case len(f) == 4 && f[0] == "begin":
			inFrame, next = false, 1
			payload.Reset()
			var err1, err2 error
			hdrBytes, err1 = strconv.Atoi(strings.TrimPrefix(f[1], "bytes="))
			hdrSum = strings.TrimPrefix(f[2], "sha256=")
			hdrLines, err2 = strconv.Atoi(strings.TrimPrefix(f[3], "lines="))
			if err1 != nil || err2 != nil {
				lastError = fmt.Errorf("results: bad frame header %q", sc.Text())
				continue
			}
			inFrame = true
		case len(f) == 2 && f[0] == "end":
			if !inFrame {
				continue
			}
			inFrame = false
			if next != hdrLines+1 || f[1] != "sha256="+hdrSum {
				lastError = fmt.Errorf("results: frame %s is incomplete (%d of %d lines)", hdrSum, next-1, hdrLines)
				continue
			}
			blob, err := base64.StdEncoding.DecodeString(payload.String())
			if err != nil {
				lastError = fmt.Errorf("results: frame %s: %w", hdrSum, err)
				continue
			}
			sum := sha256.Sum256(blob)
			if len(blob) != hdrBytes || hex.EncodeToString(sum[:]) != hdrSum {
				lastError = fmt.Errorf("results: frame %s: %d bytes with checksum %x, the header says %d bytes", hdrSum, len(blob), sum, hdrBytes)
				continue
			}
			if wantSHA256 == "" || hdrSum == wantSHA256 {
				found, lastError = blob, nil
			}
		case len(f) == 2 && inFrame:
			i, err := strconv.Atoi(f[0])
			if err != nil || i != next {
				inFrame = false
				lastError = fmt.Errorf("results: frame %s: line %q out of order (want %d)", hdrSum, f[0], next)
				continue
			}
			payload.WriteString(f[1])
			next++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results: reading the log: %w", err)
	}
	if found != nil {
		return found, nil
	}
	if lastError != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoFrame, lastError)
	}
	return nil, ErrNoFrame
}
