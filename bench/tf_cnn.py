"""The seed CNN in TensorFlow with tf.distribute.MirroredStrategy, as the seed
guide writes it (Keras model built and compiled in the strategy's scope,
model.fit on a tf.data pipeline): DEVICES logical CPU devices, BATCH examples
per replica, STEPS timed steps after a warm-up; prints images/s. TensorFlow
runs THREADS intra-op threads (1 per device: the peer of one mgc device per
core). The peer of bench/train.sh; run from the venv that script makes.
    tf_cnn.py STEPS BATCH DEVICES"""
import os, sys, time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import warnings

warnings.filterwarnings("ignore")  # Keras notes on tf.data pipelines, not results
import numpy as np
import tensorflow as tf

from peer_data import fashion_mnist

WARMUP = 20


def main():
    steps, batch, devices = map(int, sys.argv[1:4])
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(devices)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * devices)
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{k}" for k in range(devices)])
    x, y = fashion_mnist()
    global_batch = batch * devices
    data = tf.data.Dataset.from_tensor_slices((x[..., None], y)).shuffle(60000, seed=1).repeat().batch(global_batch)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input((28, 28, 1)),
            tf.keras.layers.Conv2D(32, 3, activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10)])
        model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      optimizer=tf.keras.optimizers.Adam(1e-3), metrics=["accuracy"])

    class Clock(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, step, logs=None):
            if step == WARMUP:
                self.start = time.perf_counter()

        def on_train_end(self, logs=None):
            self.seconds = time.perf_counter() - self.start

    clock = Clock()
    model.fit(data, epochs=1, steps_per_epoch=WARMUP + steps, callbacks=[clock], verbose=0)
    print(round(steps * global_batch / clock.seconds))


main()
