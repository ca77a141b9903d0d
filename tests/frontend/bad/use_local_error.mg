use lib_layers

model m {
  input x: f32[batch, 8]
  y = widen(x, 4)
  output y
}
