# rootdir conftest: makes train_dann importable from tests/ (rootdir on sys.path)
