"""Tokenizers, corpora, datasets and collators for self-supervised pretraining.

Submodules (import what you need; heavy optional packages are only touched when their loader runs):
tokenizers (train_bpe, train_wordpiece, char_tokenizer, word_tokenizer, gpt2_tokenizer, load_tokenizer), corpora
(python_docs, wiki_summaries, read_text), sources (CorpusSource: .txt, .txt.gz, .jsonl(.gz), .parquet, saved
`datasets` folders, read block by block), streaming (bounded-memory, resumable tokenization: CorpusScan,
ChunkEncoder, write_ids), token_file (TokenFile), pairs (number_pairs, read_pairs_tsv,
number_words_tokenizer), images (mnist_5k, sklearn_digits, image_folder, train_test_split, split_images,
user_images, shift_images), collators (pad_batch, apply_mlm_rule, MLMCollator, CausalLMCollator, Seq2SeqCollator).
The training recipes (attnlab.training.recipes) draw all their data from here.
"""
