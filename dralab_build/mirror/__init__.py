"""The offline mirror of a workshop (python -m dralab_build.mirror): its plan, its files tree, its images, its manifest."""
