use nn

model m {
  input x: f32[batch, 4, 6, 3]
  y = transpose(x, perm: [0, 2, 2, 1])
  output y
}
