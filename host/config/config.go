// Package config says where AMID keeps its data and finds its plugins, and is the one place
// that reads AMID's environment variables.
//
// A front end builds Settings from what the user chose (the desktop's Settings screen; the
// CLI has no saved settings), lets the environment take precedence with WithEnv, and passes
// the result by value to host.Open. Empty fields take their defaults when resolved to Paths:
//
//	AMID_HOME        the data folder (default: <os.UserConfigDir>/amid)
//	AMID_PLUGIN_DIR  the user's plugin folder (default: <data folder>/plugins)
//	AMID_DEVICE      where plugins compute: auto (default: a discrete GPU, then an
//	                 integrated one, else the CPU; never a software Vulkan device), cpu,
//	                 vulkan (any Vulkan device, a software one included) or vulkan:N
//
// and where new runs train their lanes (Executor):
//
//	AMID_EXECUTOR         local (this machine, the default), process (a process of its own
//	                      per lane-fold on this machine) or slurm (a Slurm job per lane-fold)
//	AMID_SLURM_PARTITION  the partition the jobs ask for (default: the cluster's)
//	AMID_SLURM_ACCOUNT    the account they are charged to (default: the user's)
//	AMID_SLURM_JOBS       lane-folds at once on CPUs (default 4)
//	AMID_SLURM_CPUS       cores a job, its worker split (default 4)
//	AMID_SLURM_GPUS       lane-folds at once on a GPU each (default 0)
//
// and the PACS amid predict --pacs talks to by DICOMweb (PACS; never written to a log or
// an audit entry):
//
//	AMID_PACS_URL       the DICOMweb service root, such as http://pacs:8042/dicom-web/
//	AMID_PACS_USER      the user, for HTTP basic authentication
//	AMID_PACS_PASSWORD  its password
//
// The built-in plugin folder is plugins next to the running executable (bin/plugins for
// bin/amid).
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"amid/plugins/compute"
)

// Environment variable names.
const (
	EnvHome           = "AMID_HOME"
	EnvPluginDir      = "AMID_PLUGIN_DIR"
	EnvDevice         = compute.EnvDevice
	EnvExecutor       = "AMID_EXECUTOR"
	EnvSlurmPartition = "AMID_SLURM_PARTITION"
	EnvSlurmAccount   = "AMID_SLURM_ACCOUNT"
	EnvSlurmJobs      = "AMID_SLURM_JOBS"
	EnvSlurmCPUs      = "AMID_SLURM_CPUS"
	EnvSlurmGPUs      = "AMID_SLURM_GPUS"
	EnvPACSURL        = "AMID_PACS_URL"
	EnvPACSUser       = "AMID_PACS_USER"
	EnvPACSPassword   = "AMID_PACS_PASSWORD"
)

// Settings are the folders chosen for AMID, the device its plugins compute on and where
// runs train; an empty field takes its default.
type Settings struct {
	Home           string // the data folder: the store, the runs
	PluginDir      string // the user's plugin folder
	BuiltinPlugins string // the built-in plugin folder (tests); default: plugins next to the executable
	// Device is where plugins compute (DeviceAuto when empty; see CheckDevice), passed to
	// every plugin process as AMID_DEVICE.
	Device   string
	Executor Executor
	PACS     PACS
}

// PACS is where a PACS answers DICOMweb, and who AMID is to it.
type PACS struct {
	URL, User, Password string
}

// String names the PACS by its address and user, never its password.
func (p PACS) String() string {
	if p.User == "" {
		return p.URL
	}
	return p.URL + " as " + p.User
}

// Device settings: DeviceAuto, DeviceCPU, DeviceVulkan, or "vulkan:N" for device N.
const (
	DeviceAuto   = "auto"
	DeviceCPU    = "cpu"
	DeviceVulkan = "vulkan"
)

// CheckDevice says why a device setting is not auto, cpu, vulkan or vulkan:N (nil when
// it is one of them).
func CheckDevice(s string) error {
	switch s {
	case "", DeviceAuto, DeviceCPU, DeviceVulkan:
		return nil
	}
	if n, ok := strings.CutPrefix(s, DeviceVulkan+":"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && strconv.Itoa(i) == n {
			return nil
		}
	}
	return fmt.Errorf("device %q is not auto, cpu, vulkan or vulkan:N (N a device's number)", s)
}

// Executors.
const (
	ExecutorLocal   = "local"
	ExecutorProcess = "process"
	ExecutorSlurm   = "slurm"
)

// Executor says where a new run trains its lane-folds; a run keeps the executor it
// started with. Zero fields take their defaults.
type Executor struct {
	// Kind is ExecutorLocal (""), ExecutorProcess or ExecutorSlurm.
	Kind string `json:"kind"`
	// Slurm's: the partition and account the jobs ask for, how many lane-folds train at
	// once on CPUs and on a GPU each, and the cores of a job.
	Partition string `json:"partition,omitempty"`
	Account   string `json:"account,omitempty"`
	Jobs      int    `json:"jobs,omitempty"`
	CPUs      int    `json:"cpus,omitempty"`
	GPUs      int    `json:"gpus,omitempty"`
}

// Validate says what is wrong with an executor's settings, in one sentence.
func (e Executor) Validate() error {
	switch e.Kind {
	case "", ExecutorLocal, ExecutorProcess, ExecutorSlurm:
	default:
		return fmt.Errorf("executor %q is not %s, %s or %s", e.Kind, ExecutorLocal, ExecutorProcess, ExecutorSlurm)
	}
	if e.Jobs < 0 || e.CPUs < 0 || e.GPUs < 0 {
		return fmt.Errorf("the Slurm executor's jobs (%d), cores a job (%d) and GPU jobs (%d) cannot be negative", e.Jobs, e.CPUs, e.GPUs)
	}
	return nil
}

// Merge is e with the fields o sets in place of e's.
func (e Executor) Merge(o Executor) Executor {
	for _, f := range []struct{ dst, src *string }{{&e.Kind, &o.Kind}, {&e.Partition, &o.Partition}, {&e.Account, &o.Account}} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	for _, f := range []struct{ dst, src *int }{{&e.Jobs, &o.Jobs}, {&e.CPUs, &o.CPUs}, {&e.GPUs, &o.GPUs}} {
		if *f.src != 0 {
			*f.dst = *f.src
		}
	}
	return e
}

// FromEnv returns the settings the environment gives, the CLI's settings.
func FromEnv() Settings { return Settings{}.WithEnv() }

// WithEnv returns s with each setting the environment names ($AMID_HOME, $AMID_PLUGIN_DIR,
// $AMID_DEVICE, the executor's) in place of the one s has: the environment takes
// precedence over saved settings.
func (s Settings) WithEnv() Settings {
	if h := os.Getenv(EnvHome); h != "" {
		s.Home = h
	}
	if d := os.Getenv(EnvPluginDir); d != "" {
		s.PluginDir = d
	}
	num := func(name string) int {
		n, _ := strconv.Atoi(os.Getenv(name)) // not a number: not set (Validate sees the rest)
		return n
	}
	s.Executor = s.Executor.Merge(Executor{Kind: os.Getenv(EnvExecutor), Partition: os.Getenv(EnvSlurmPartition), Account: os.Getenv(EnvSlurmAccount),
		Jobs: num(EnvSlurmJobs), CPUs: num(EnvSlurmCPUs), GPUs: num(EnvSlurmGPUs)})
	if d := strings.TrimSpace(os.Getenv(EnvDevice)); d != "" {
		s.Device = d
	}
	for name, field := range map[string]*string{EnvPACSURL: &s.PACS.URL, EnvPACSUser: &s.PACS.User, EnvPACSPassword: &s.PACS.Password} {
		if v := os.Getenv(name); v != "" {
			*field = v
		}
	}
	return s
}

// DeviceEnv is the environment that passes the device setting to a plugin process
// (auto when s has none). A setting that CheckDevice refuses is an error.
func (s Settings) DeviceEnv() ([]string, error) {
	if err := CheckDevice(s.Device); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvDevice, err)
	}
	d := s.Device
	if d == "" {
		d = DeviceAuto
	}
	return []string{EnvDevice + "=" + d}, nil
}

// EnvOverrides lists the environment variables set that take precedence over saved
// settings.
func EnvOverrides() []string {
	var out []string
	for _, e := range []string{EnvHome, EnvPluginDir, EnvDevice, EnvExecutor, EnvSlurmPartition, EnvSlurmAccount, EnvSlurmJobs, EnvSlurmCPUs, EnvSlurmGPUs, EnvPACSURL, EnvPACSUser, EnvPACSPassword} {
		if os.Getenv(e) != "" {
			out = append(out, e)
		}
	}
	return out
}

// Paths are settings resolved: absolute, with the defaults filled in.
type Paths struct {
	Home           string // the data folder
	Store          string // the bbolt store, amid.db in the data folder
	Runs           string // where the desktop program creates runs: runs in the data folder
	UserPlugins    string // the user's plugin folder
	BuiltinPlugins string // the built-in plugin folder
}

// Paths resolves the settings.
func (s Settings) Paths() (Paths, error) {
	var p Paths
	var err error
	if s.Home != "" {
		if p.Home, err = filepath.Abs(s.Home); err != nil {
			return Paths{}, fmt.Errorf("data folder %s: %w", s.Home, err)
		}
	} else {
		d, err := os.UserConfigDir()
		if err != nil {
			return Paths{}, fmt.Errorf("no data folder: set %s (%w)", EnvHome, err)
		}
		p.Home = filepath.Join(d, "amid")
	}
	p.Store = filepath.Join(p.Home, "amid.db")
	p.Runs = filepath.Join(p.Home, "runs")
	p.UserPlugins = filepath.Join(p.Home, "plugins")
	if s.PluginDir != "" {
		if p.UserPlugins, err = filepath.Abs(s.PluginDir); err != nil {
			return Paths{}, fmt.Errorf("plugin folder %s: %w", s.PluginDir, err)
		}
	}
	if s.BuiltinPlugins != "" {
		if p.BuiltinPlugins, err = filepath.Abs(s.BuiltinPlugins); err != nil {
			return Paths{}, fmt.Errorf("built-in plugin folder %s: %w", s.BuiltinPlugins, err)
		}
	} else if p.BuiltinPlugins, err = builtinPluginDir(); err != nil {
		return Paths{}, err
	}
	return p, nil
}

// builtinPluginDir is the folder of plugins shipped with AMID: plugins next to the running
// executable (bin/plugins for bin/amid).
func builtinPluginDir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the amid executable: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Join(filepath.Dir(exe), "plugins"), nil
}
