package data

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Source loads one case. Load may be called from several goroutines at once.
type Source interface {
	Name() string
	Load() (*Case, error)
}

// FileSource reads a case's image and label files, resamples them when Spacing is set, and
// normalises and maps labels as [NewCase] does.
type FileSource struct {
	Image, Label string     // paths; Label may be empty
	Spacing      [3]float64 // target spacing; zero keeps the file's grid
	Norm         Norm
	Classes      []int
}

// Name is the image path.
func (f *FileSource) Name() string { return f.Image }

// Load reads and prepares the case.
func (f *FileSource) Load() (*Case, error) {
	img, err := imageio.Read(f.Image)
	if err != nil {
		return nil, err
	}
	var lab *volume.Volume
	if f.Label != "" {
		if lab, err = imageio.Read(f.Label); err != nil {
			return nil, err
		}
	}
	if f.Spacing != [3]float64{} {
		if img, err = Resample(img, f.Spacing, false); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Image, err)
		}
		if lab != nil {
			if lab, err = Resample(lab, f.Spacing, true); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Label, err)
			}
		}
	}
	return NewCase(f.Image, img, lab, f.Norm, f.Classes)
}

// Config sets up a [Loader].
type Config struct {
	Sampler
	Augment  *Augment // nil: no augmentation
	Batch    int      // samples per batch
	Channels int      // image channels every case must have
	Seed     uint64
	Workers  int   // goroutines filling batches; 0: GOMAXPROCS
	Prefetch int   // batches allocated (ready or being filled); 0: Workers+1
	Budget   int64 // bytes of cases kept in memory; the rest are read from disk per sample
	Labels   bool  // whether batches carry label maps
	// Start is the index of the first batch: batch k is drawn from (Seed, k) alone, so a
	// loader started at k yields what an uninterrupted one yields from its k-th batch on
	// (a resumed training run sees the batches it would have seen).
	Start int
}

// Batch is one batch in the engine's layout.
type Batch struct {
	Index  int       // position in the stream, from Config.Start
	Image  []float32 // Batch × Channels × patch voxels
	Label  []int32   // Batch × patch voxels; nil without labels
	Forced []bool    // per sample: centred on foreground
	err    error
}

// Loader fills batches on background goroutines. Batches come out of Next in order; each
// must be handed back with Release before its buffers are reused.
type Loader struct {
	cfg      Config
	src      []Source
	resident []*Case
	free     chan *Batch
	done     chan *Batch
	stop     chan struct{}
	wg       sync.WaitGroup
	pending  map[int]*Batch
	next     int
	once     sync.Once
}

// NewLoader loads cases in order while they fit in cfg.Budget (those stay resident; the
// others are read from their source whenever drawn) and starts the workers.
func NewLoader(cfg Config, src []Source) (*Loader, error) {
	if len(src) == 0 {
		return nil, errors.New("loader: no cases")
	}
	if cfg.Batch <= 0 || cfg.Channels <= 0 || cfg.Len() <= 0 {
		return nil, fmt.Errorf("loader: batch %d, channels %d and patch %v must be positive", cfg.Batch, cfg.Channels, cfg.Patch)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = cfg.Workers + 1
	}
	if cfg.Start < 0 {
		return nil, fmt.Errorf("loader: start batch %d is negative", cfg.Start)
	}
	l := &Loader{cfg: cfg, src: src, resident: make([]*Case, len(src)), pending: map[int]*Batch{}, next: cfg.Start,
		free: make(chan *Batch, cfg.Prefetch), done: make(chan *Batch, cfg.Prefetch), stop: make(chan struct{})}
	var used int64
	for i, s := range src {
		c, err := l.load(s)
		if err != nil {
			return nil, err
		}
		if used+c.Bytes() > cfg.Budget {
			break
		}
		used += c.Bytes()
		l.resident[i] = c
	}
	n := cfg.Len()
	for range cfg.Prefetch {
		b := &Batch{Image: make([]float32, cfg.Batch*cfg.Channels*n), Forced: make([]bool, cfg.Batch)}
		if cfg.Labels {
			b.Label = make([]int32, cfg.Batch*n)
		}
		l.free <- b
	}
	jobs := make(chan *Batch)
	l.wg.Add(1 + cfg.Workers)
	go func() { // hands out batch numbers in order as buffers come free
		defer l.wg.Done()
		defer close(jobs)
		for k := cfg.Start; ; k++ {
			select {
			case b := <-l.free:
				b.Index = k
				select {
				case jobs <- b:
				case <-l.stop:
					return
				}
			case <-l.stop:
				return
			}
		}
	}()
	for range cfg.Workers {
		go func() {
			defer l.wg.Done()
			var cache *Case
			for b := range jobs {
				b.err = l.fill(b, &cache)
				select {
				case l.done <- b:
				case <-l.stop:
					return
				}
			}
		}()
	}
	return l, nil
}

// Resident is the number of cases held in memory.
func (l *Loader) Resident() int {
	n := 0
	for _, c := range l.resident {
		if c != nil {
			n++
		}
	}
	return n
}

func (l *Loader) load(s Source) (*Case, error) {
	c, err := s.Load()
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	if c.C != l.cfg.Channels {
		return nil, fmt.Errorf("loader: case %s has %d channels, the task %d", c.Name, c.C, l.cfg.Channels)
	}
	if l.cfg.Labels && c.Label == nil {
		return nil, fmt.Errorf("loader: case %s has no label map", c.Name)
	}
	return c, nil
}

// fill draws batch b with the generator of its index. cache holds the worker's last case
// read from disk.
func (l *Loader) fill(b *Batch, cache **Case) error {
	r := rand.New(rand.NewPCG(l.cfg.Seed, uint64(b.Index)))
	n, C := l.cfg.Len(), l.cfg.Channels
	for i := range l.cfg.Batch {
		j := r.IntN(len(l.src))
		c := l.resident[j]
		if c == nil {
			if *cache == nil || (*cache).Name != l.src[j].Name() {
				var err error
				if *cache, err = l.load(l.src[j]); err != nil {
					*cache = nil
					return err
				}
			}
			c = *cache
		}
		img := b.Image[i*C*n : (i+1)*C*n]
		var lab []int32
		if b.Label != nil {
			lab = b.Label[i*n : (i+1)*n]
		}
		b.Forced[i] = l.cfg.Sample(r, c, img, lab)
		if l.cfg.Augment != nil {
			l.cfg.Augment.Apply(r, l.cfg.Patch, C, img, lab)
		}
	}
	return nil
}

// Next returns the next batch in order, waiting for it if needed. An error reading a case
// is returned with the batch that needed it (and the batch is released).
func (l *Loader) Next() (*Batch, error) {
	for {
		select {
		case <-l.stop:
			return nil, ErrClosed
		default:
		}
		if b, ok := l.pending[l.next]; ok {
			delete(l.pending, l.next)
			l.next++
			if b.err != nil {
				err := b.err
				l.Release(b)
				return nil, err
			}
			return b, nil
		}
		select {
		case b := <-l.done:
			l.pending[b.Index] = b
		case <-l.stop:
			return nil, ErrClosed
		}
	}
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("loader: closed")

// Release hands a batch's buffers back for refilling.
func (l *Loader) Release(b *Batch) {
	b.err = nil
	select {
	case l.free <- b:
	case <-l.stop:
	}
}

// Close stops the workers and waits for them.
func (l *Loader) Close() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}
