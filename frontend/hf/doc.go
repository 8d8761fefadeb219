// Package hf reads Hugging Face checkpoints of the Llama family (Llama 2
// and 3, SmolLM2, Mistral, Qwen2 and Qwen2.5, Qwen3) for tec import and
// for binding their weights: config.json (ParseConfig), the .te program of
// a prefill and a decode step that config gives (Program), and the one
// mapping between the program's params and the checkpoint's tensors
// (Params, TensorName), through which ReadParams reads the weights from
// the safetensors shards (docs/import.md, "Hugging Face checkpoints").
package hf
