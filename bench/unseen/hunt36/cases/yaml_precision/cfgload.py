"""A tiny OmegaConf stand-in: YAML -> attribute dict, with dotted key=value overrides."""
import yaml


class Node(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as e:
            raise AttributeError(key) from e

    def __setattr__(self, key, value):
        self[key] = value


def _wrap(obj):
    if isinstance(obj, dict):
        return Node({k: _wrap(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [_wrap(v) for v in obj]
    return obj


def _parse(value):
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return value


def load(path, overrides=()):
    with open(path) as f:
        cfg = _wrap(yaml.safe_load(f))
    for item in overrides:
        key, _, value = item.partition("=")
        node = cfg
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, Node())
        node[leaf] = _parse(value)
    return cfg


def _plain(obj):
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def to_yaml(cfg):
    return yaml.safe_dump(_plain(cfg), sort_keys=False)
