# duplicates.mg - the cse pass's test model (tests/cli/cse.sh): b computes
# what a does; d1 and d2 apply dropout to one tensor from two call sites (two
# seeds, two masks), which must stay two
use nn

model dup {
  input x: f32[batch, 8]
  input label: i32[batch]
  h = dense(x, 16)
  a = tanh(h)
  b = tanh(h)
  d1 = dropout(a, 0.5)
  d2 = dropout(a, 0.5)
  logits = dense(d1 + d2 + b, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric acc = sparse_categorical_accuracy(logits, label)
}

train dup {
  optimizer = sgd(learning_rate: 0.1)
  batch = 32 global
}
