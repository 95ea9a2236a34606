"""Submit the training to the Ray cluster (one TPU host per task); the worker's environment comes from
runtime_env, so the driver machine needs no torch_xla."""
import argparse

import ray


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--address", default="auto")
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    ray.init(
        address=args.address,
        runtime_env={
            "working_dir": ".",
            "env_vars": {"PJRT_DEVICE": "TPU", "XLA_USE_BF16": "1", "TPU_NUM_DEVICES": "1"},
        },
    )

    @ray.remote(resources={"TPU": 1})
    def run(steps):
        import train_parts

        return train_parts.main(["--steps", str(steps)])

    print(ray.get(run.remote(args.steps)))


if __name__ == "__main__":
    main()
