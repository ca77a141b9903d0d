# nn.mg - layers, activations, losses and metrics of the model language,
# written on the primitives of ir/ops.def (called as prim.NAME). Layers follow
# Keras: channels-last images, HWIO filters, glorot_uniform kernels and zero
# biases by default. Initializers (zeros, ones, glorot_uniform, he_normal) are
# built-in names.

# ---- activations ----

fn identity(x) {
  return x
}

fn relu(x: f32) {
  return prim.relu(x)
}

fn sigmoid(x: f32) {
  return prim.sigmoid(x)
}

fn tanh(x: f32) {
  return prim.tanh(x)
}

fn softmax(x: f32) {
  return prim.softmax(x)
}

# a where mask (1/0, as x > y gives) holds, else b; gradients to a where the
# mask is 1 and to b where it is 0 (finite a and b)
fn where(mask: f32, a, b) {
  return mask * a + (1.0 - mask) * b
}

# ---- regularizers (Keras'): a penalty on a param, added to the loss once per step ----

# A regularizer is the list [l1 factor, l2 factor]; [] is none (the layers' default).
fn l1(l1: float = 0.01) {
  return [l1, 0.0]
}

fn l2(l2: float = 0.01) {
  return [0.0, l2]
}

fn l1_l2(l1: float = 0.01, l2: float = 0.01) {
  return [l1, l2]
}

# adds regularizer r's penalty on w to the model's loss, l1 * sum(|w|) +
# l2 * sum(w * w) (loss +=, docs/language.md); returns w
fn regularize(w: f32, r: list) {
  if len(r) > 0 {
    flat = prim.reshape(w, size(w))
    if r[0] != 0 {
      loss += r[0] * prim.reduce_sum(prim.relu(flat) + prim.relu(-flat), axes: 1)
    }
    if r[1] != 0 {
      loss += r[1] * prim.reduce_sum(flat * flat, axes: 1)
    }
  }
  return w
}

# ---- layers ----

# y = activation(x W + b); params dense/kernel f32[k, units], dense/bias f32[units]
fn dense(x: f32[b, k], units: int, activation: fn = identity,
         kernel_initializer = glorot_uniform, bias_initializer = zeros,
         kernel_regularizer: list = [], bias_regularizer: list = []) {
  param kernel: f32[k, units] = kernel_initializer
  param bias:   f32[units]    = bias_initializer
  kernel = regularize(kernel, kernel_regularizer)
  bias = regularize(bias, bias_regularizer)
  return activation(prim.matmul(x, kernel) + bias)
}

# 2-D convolution of NHWC images with a square window; padding "valid" or "same"
fn conv2d(x: f32[b, h, w, cin], filters: int, kernel: int, strides: int = 1,
          padding: str = "valid", activation: fn = identity,
          kernel_initializer = glorot_uniform, bias_initializer = zeros,
          kernel_regularizer: list = [], bias_regularizer: list = []) {
  param kernel: f32[kernel, kernel, cin, filters] = kernel_initializer
  param bias:   f32[filters]                      = bias_initializer
  kernel = regularize(kernel, kernel_regularizer)
  bias = regularize(bias, bias_regularizer)
  return activation(prim.conv2d(x, kernel, strides: strides, padding: padding) + bias)
}

# pooling windows pool x pool, moving by strides (default: the window)
fn max_pool2d(x: f32[b, h, w, c], pool: int = 2, strides: int = pool, padding: str = "valid") {
  return prim.max_pool2d(x, k_h: pool, k_w: pool, strides: strides, padding: padding)
}

fn avg_pool2d(x: f32[b, h, w, c], pool: int = 2, strides: int = pool, padding: str = "valid") {
  return prim.avg_pool2d(x, k_h: pool, k_w: pool, strides: strides, padding: padding)
}

# [b, ...] -> [b, everything else]
fn flatten(x: f32) {
  return prim.reshape(x, dim(x, 0), size(x) / dim(x, 0))
}

# zeroes a fraction `rate` of the elements while training, scales the rest by 1/(1-rate);
# the identity in eval and predict. seed -1: a mask stream of this call's own
fn dropout(x: f32, rate: float, seed: int = -1) {
  return prim.dropout(x, rate: rate, seed: seed)
}

# ---- losses: the batch mean of a per-example loss ----

fn sparse_softmax_cross_entropy(logits: f32[b, c], labels: i32[b]) {
  return prim.reduce_mean(prim.sparse_xent(logits, labels), axes: 1)
}

fn mean_squared_error(predictions: f32[b, n], targets: f32[b, n]) {
  d = predictions - targets
  return prim.reduce_mean(prim.reduce_mean(d * d, axes: 2), axes: 1)
}

# ---- metrics: the batch mean of a per-example score ----

fn sparse_categorical_accuracy(logits: f32[b, c], labels: i32[b]) {
  return prim.reduce_mean(prim.argmax_match(logits, labels), axes: 1)
}

# ---- normalization ----

# Keras BatchNormalization over the last axis. Training normalizes with the
# batch's mean and (biased) variance and moves the state toward them:
# moving = moving * momentum + batch * (1 - momentum); eval and predict use the
# moving statistics. sync: true takes the statistics over the global batch
# (an all-reduce in the forward pass, Keras' synchronized=True); without it
# each replica uses its own batch and the moving statistics are averaged over
# replicas when saved and before eval (docs/language.md).
fn batch_norm(x: f32, momentum: float = 0.99, epsilon: float = 0.001) {
  c = dim(x, -1)
  param gamma: f32[c] = ones
  param beta: f32[c] = zeros
  state moving_mean: f32[c] = zeros
  state moving_variance: f32[c] = ones
  rows = size(x) / c
  batch_mean = prim.reduce_mean(prim.reshape(x, rows, c), axes: 1)
  centered = x - prim.in_training(batch_mean, moving_mean)
  batch_variance = prim.reduce_mean(prim.reshape(centered * centered, rows, c), axes: 1)
  variance = prim.in_training(batch_variance, moving_variance)
  new_mean = prim.assign(moving_mean, moving_mean * momentum + batch_mean * (1.0 - momentum))
  new_variance = prim.assign(moving_variance, moving_variance * momentum + batch_variance * (1.0 - momentum))
  return centered * (gamma / prim.sqrt(variance + epsilon)) + beta
}
