use nn
fn norm(x: f32) {
  state moving_mean: f32[4] = zeros
  param moving_mean: f32[4] = ones
  return x
}
model m {
  input x: f32[batch, 4]
  y = norm(x)
  output y
}
