// Package tokenizer reads Hugging Face tokenizer.json files.
package tokenizer
