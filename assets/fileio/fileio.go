// Package fileio is the one place AMID writes a file that must survive a crash, and the
// one place it hashes a file.
//
// Write and WriteWith put the bytes in a temporary file beside the target, sync it, rename
// it over the target and sync the folder, so that a reader (or a process started after a
// crash or a power cut) sees the old file or the new one, never half of one, and a write
// that returned stays written. SHA256 is the lower-case hex sha256 of a file's bytes, the
// form in which checkpoints, plugin binaries and package files are named everywhere.
// ReadJSON reads back a JSON record (a run's state, a package's model configuration).
package fileio

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// bufSize is the size of the write buffer and of the blocks SHA256 reads: io.Copy's 32 KiB
// blocks spent a quarter of a plugin binary's hash in read calls.
const bufSize = 256 << 10

// Write writes the parts, in order, to path with mode 0644, atomically and durably (see the
// package documentation). On error the target is left as it was and no temporary file
// remains.
func Write(path string, parts ...[]byte) error {
	return WriteWith(path, func(w io.Writer) error {
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteWith is Write for content produced by write, which gets a buffered writer to the
// temporary file; an error from write leaves the target as it was.
func WriteWith(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, bufSize)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp makes it 0600
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// SyncDir syncs the folder dir, so that the names created, renamed or removed in it survive
// a power cut. It does nothing where folders cannot be synced (Windows, and file systems
// that refuse with EINVAL).
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("syncing folder %s: %w", dir, err)
	}
	return nil
}

// SHA256 returns the lower-case hex sha256 of the file at path.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum, _, err := sha256Of(f)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return sum, nil
}

// PathSHA256 is the lower-case hex sha256 of a file, or of a folder (a DICOM series, a
// submission) as the sha256 of one "path TAB sha256" line per file under it
// (slash-separated relative paths, in lexical order). Links are followed.
func PathSHA256(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return SHA256(real)
	}
	var b strings.Builder
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		s, err := SHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(real, p)
		fmt.Fprintf(&b, "%s\t%s\n", filepath.ToSlash(rel), s)
		return nil
	})
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(h[:]), nil
}

// SHA256FS returns the lower-case hex sha256 of the file name in fsys (a folder or a zip)
// and its size in bytes.
func SHA256FS(fsys fs.FS, name string) (sum string, size int64, err error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return sha256Of(f)
}

// sha256Of reads r to its end and returns the lower-case hex sha256 of what it read and
// the number of bytes.
func sha256Of(r io.Reader) (sum string, n int64, err error) {
	h := sha256.New()
	// Hidden behind a plain io.Reader, a file cannot take over the copy with its own
	// 32 KiB blocks (os.File.WriteTo).
	n, err = io.CopyBuffer(h, struct{ io.Reader }{r}, make([]byte, bufSize))
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// ReadJSON decodes the JSON file at path into v; a decoding error names the file.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Within reports whether path lies inside dir (or is dir), comparing the paths as written:
// links are not followed. An empty path lies nowhere. The host and the plugin tests check
// with it that what a plugin returns stays in the folder it was given.
func Within(dir, path string) bool {
	if path == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
