# control.mg - lists, comparisons, and/or/not, if/else, for, several return
# values, line breaks inside brackets, a UTF-8 byte order mark (this file
# starts with one)
use nn

# a block of `depth` dense layers; wider ones first
fn tower(x: f32[b, k], widths, depth: int) {
  for i in range(depth) {
    x = dense(x, widths[i],
              activation: relu)
  }
  return x
}

fn split_heads(x: f32[b, k]) {
  half = k / 2
  return dense(x, half), dense(x, half)
}

fn pick(x: f32, wide: int) {
  if wide > 1 and not (wide == 3) {
    y = dense(x, 8)
  } else if wide == 3 or wide < 0 {
    y = dense(x, 6)
  } else {
    y = dense(x, 4)
  }
  return y
}

model control {
  input image: f32[batch, 12]
  input label: i32[batch]
  widths = [16, 12, 10]
  x = tower(image, widths, len(widths))
  a, b = split_heads(x)
  mask = a > 0.5
  h = pick(a * mask + b, 2)
  for k in range(3, 0, -1) {
    h = h + k
  }
  logits = dense(h,
    10) + dense(pick(b, 3), 10) + dense(pick(b, 1), 10) * (1 <= 2)
  loss = sparse_softmax_cross_entropy(logits, label)
}

train control {
  optimizer = sgd
  batch = 4 per replica
}
