# log_of_pixels.mg - a model whose forward pass makes -Inf (log of a zero pixel),
# for mgc run --check-numerics.
use nn

model log_of_pixels {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  h      = prim.log(flatten(image))
  logits = dense(h, 10)
  loss   = sparse_softmax_cross_entropy(logits, label)
}

train log_of_pixels {
  optimizer = sgd(learning_rate: 0.01)
  batch     = 32 per replica
}
