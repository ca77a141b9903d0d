use nn

fn layer(x: f32[b, k]) {
  param w: f32[k, k] = ones
  param w: f32[k] = zeros
  return prim.matmul(x, w)
}

model m {
  input x: f32[batch, 4]
  y = layer(x)
  output y
}
