# features.mg - exercises the language beyond the examples.
use nn

# a user layer made of stdlib layers: params "block/dense/kernel", ...
fn block(x: f32[b, k], units: int = k / 2, act: fn = relu) {
  h = dense(x, units * 2, activation: act)
  return dense(h, units)
}

fn squash(x) {
  return x * 0.5 + -(x / 4)
}

model features {
  input image: f32[batch, 32, 32, 3]
  input target: f32[batch, 10]

  x = conv2d(image, filters: 8, kernel: 5, strides: 2, padding: "same",
             activation: tanh, kernel_initializer: he_normal)
  x = avg_pool2d(x, 2, padding: "same")
  x = conv2d(x, 16, 3)
  x = max_pool2d(x, pool: 3, strides: 1)
  x = dropout(flatten(x), rate: 0.25)
  x = block(x, act: sigmoid)
  x = block(x, 20)
  y = softmax(dense(squash(x), 10, activation: identity))
  param scale: f32[10] = ones
  y = y * scale - 1

  output y
  loss = mean_squared_error(y, target)
}

train features {
  optimizer = sgd(0.05, momentum: 0.9, nesterov: true)
  batch = 96 global
}
