# char_bigram.mg - the smallest causal character model: each position's
# logits depend on its own byte only (embedding, then dense per position),
# for text data and mgc generate (tests/cli/text.sh).
use nn

model char_bigram {
  input tokens: i32[batch, 8]
  input label: i32[batch, 8]
  e = embedding(tokens, 256, 16)
  output logits = dense(e, 256)
  loss = sparse_softmax_cross_entropy(logits, label)
}

train char_bigram {
  optimizer = adam(learning_rate: 0.02)
  batch = 8 global
}
