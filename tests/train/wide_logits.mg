# Issue 10's model: a 300,000-class output layer, whose gradient bucket is
# all-reduced on the comm stream while the compute stream still works on the
# first layer's gradients. Its all-reduce output once got bytes that the
# compute stream was still reading, and the replicas diverged.
use nn

model wide_logits {
  input x: f32[batch, 8]
  input label: i32[batch]
  h = dense(x, 16, activation: relu)
  logits = dense(h, 300000)
  loss = sparse_softmax_cross_entropy(logits, label)
}

train wide_logits {
  optimizer = adam
  batch = 8 per replica
}
