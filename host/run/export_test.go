package run

// BuiltPlugins is the folder TestMain built amid-plugin-segmentation into, as make build
// builds bin/plugins: the examples' built-in plugin folder.
func BuiltPlugins() string { return pluginDir }
