# sync_bn.mg - batch_norm with statistics over the global batch: 2 and 4 devices
# must train what 1 device trains (tests/train.cmake)
use nn

fn sync_batch_norm(x: f32, momentum: float = 0.99, epsilon: float = 0.001) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  state moving_mean: f32[c] = zeros
  state moving_variance: f32[c] = ones
  rows = size(x) / c
  batch_mean = prim.all_reduce(prim.reduce_mean(prim.reshape(x, rows, c), axes: 1), mean: 1)
  centered = x - prim.in_training(batch_mean, moving_mean)
  batch_variance = prim.all_reduce(prim.reduce_mean(prim.reshape(centered * centered, rows, c), axes: 1), mean: 1)
  variance = prim.in_training(batch_variance, moving_variance)
  new_mean = prim.assign(moving_mean, moving_mean * momentum + batch_mean * (1.0 - momentum))
  new_variance = prim.assign(moving_variance, moving_variance * momentum + batch_variance * (1.0 - momentum))
  return centered * (gamma / prim.sqrt(variance + epsilon)) + beta
}

# no biases before batch_norm (it removes them: their gradient is rounding noise)
fn conv(x: f32[b, h, w, cin], filters: int) {
  param kernel: f32[3, 3, cin, filters] = glorot_uniform
  return prim.conv2d(x, kernel)
}

fn linear(x: f32[b, k], units: int) {
  param kernel: f32[k, units] = glorot_uniform
  return prim.matmul(x, kernel)
}

model sync_bn {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = relu(sync_batch_norm(conv(image, 8)))
  x = max_pool2d(x, 2)
  x = relu(sync_batch_norm(linear(flatten(x), 32)))
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train sync_bn {
  optimizer = sgd(learning_rate: 0.02)
  batch = 64 global
}
