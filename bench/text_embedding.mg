# text_embedding.mg - issue 13's text classifier with a real embedding
# (bench/text_classifier.sh): 64 tokens of a 10,000-word vocabulary ->
# embedding 64 -> mean over the tokens -> dense 64 relu -> dense 2, sparse
# cross-entropy, Adam; 32 examples per replica
use nn

model text_embedding {
  input tokens: i32[batch, 64]
  input label: i32[batch]
  e = embedding(tokens, 10000, 64)
  h = dense(prim.reduce_mean(e, axes: 2), 64, activation: relu)
  logits = dense(h, 2)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train text_embedding {
  optimizer = adam(learning_rate: 0.001)
  batch = 32 per replica
}
