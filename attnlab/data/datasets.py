"""Everything a training recipe reads, in one import: token files, translation pairs, image sets.

Each kind lives in its own module (token_file, pairs, images); this module gathers their public names.
"""

from attnlab.data.images import image_folder, mnist_5k, sklearn_digits, train_test_split
from attnlab.data.pairs import digit_words, number_pairs, number_split, read_pairs_tsv
from attnlab.data.token_file import TokenFile, encode_corpus

__all__ = [
    "TokenFile", "encode_corpus",
    "number_pairs", "number_split", "digit_words", "read_pairs_tsv",
    "mnist_5k", "sklearn_digits", "image_folder", "train_test_split",
]
