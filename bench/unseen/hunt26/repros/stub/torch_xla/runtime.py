def world_size():
    return 1


def global_ordinal():
    return 0


def local_ordinal():
    return 0


def use_spmd(*a, **k):  # hunt26 stub addition
    pass


def global_runtime_device_count():  # hunt26 stub addition
    return 1
