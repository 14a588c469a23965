// Package llm is a planner that asks a language model, through any OpenAI-compatible
// chat-completions endpoint, for the method lanes of a run.
//
// The request carries only what the [Scrubber] lets through: the dataset fingerprint (numbers and
// known keys), the task text and the results so far; never pixels, file paths or
// identifying DICOM tags. The reply must match a JSON schema of lanes; each lane's plugin
// must exist and its configuration must validate against that plugin's schema. Invalid lanes
// are dropped with a logged reason; a reply with no valid lane is retried with the
// validation error fed back, and after the last attempt the fallback planner takes over.
package llm
