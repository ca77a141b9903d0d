# model.mg - `use nn` finds the nn.mg beside this file before the stdlib's
use nn

model shadow {
  input x: f32[batch, 4]
  output y = dense(x, 2)
}
