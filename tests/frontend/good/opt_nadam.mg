# optimizers.mg - Keras defaults of nadam; a loss of a user-written mean.
model opt {
  input x: f32[batch, 4]
  input y: f32[batch]
  param w: f32[4, 1] = zeros
  d = prim.reshape(prim.matmul(x, w), batch) - y
  loss = prim.reduce_mean(d * d, axes: 1)
}

train opt {
  optimizer = nadam
  batch = 8 per replica
}
