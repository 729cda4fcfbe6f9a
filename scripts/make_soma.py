"""Write a small tiledbsoma experiment into tests/data/soma/ with a truth.json of what tiledbsoma reads back.
tiledbsoma is not a dependency (it pulls scanpy and anndata); run this in a venv of its own:

    python3 -m venv /tmp/soma && /tmp/soma/bin/pip install tiledbsoma==2.3.0
    /tmp/soma/bin/python scripts/make_soma.py [OUT]

The experiment is the ordinary workflow: ``tiledbsoma.io.from_anndata`` of 40 cells by 12 genes (obs with
categorical, string, float, nullable integer and boolean columns; var with a categorical; X as a sparse
float32 matrix and a second layer; obsm), then a second AnnData of 20 cells appended to it
(``register_anndatas``, ``prepare_experiment``, ``from_anndata`` in append mode): new fragments, X's current
domain grown, and the categorical's enumeration extended with a category the first batch lacks. Then
``update_obs`` drops a column and adds two (a float and a categorical): obs's schema evolves, and its cells
are written again. Beside it, ``extras`` (``_extras``). truth.json holds, per array (its path under tests/data/soma), tiledbsoma's read of every column, sorted by
soma_joinid (dataframes) or by the dimensions (nd arrays), and its metadata's ``soma_object_type``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anndata
import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse
import tiledbsoma
import tiledbsoma.io

ROOT = Path(__file__).resolve().parent.parent


def _anndata(n_obs: int, seed: int, cell_types: list[str], first: int) -> anndata.AnnData:
    rng = np.random.default_rng(seed)
    obs = pd.DataFrame({
        "cell_type": pd.Categorical(rng.choice(cell_types, n_obs), categories=cell_types),
        "donor": [f"donor-{i % 3}" for i in range(n_obs)],
        "score": rng.normal(size=n_obs).astype(np.float64),
        "n_genes": pd.array([None if i % 7 == 0 else i for i in range(n_obs)], dtype="Int32"),
        "is_good": rng.random(n_obs) > 0.5,
    }, index=[f"cell-{first + i}" for i in range(n_obs)])
    var = pd.DataFrame({"kind": pd.Categorical(["coding", "noncoding"] * 6)}, index=[f"gene-{j}" for j in range(12)])
    x = scipy.sparse.random(n_obs, 12, density=0.3, format="csr", dtype=np.float32, random_state=seed)
    ad = anndata.AnnData(X=x, obs=obs, var=var)
    ad.layers["counts"] = scipy.sparse.csr_matrix(np.floor(x.toarray() * 10).astype(np.float32))
    ad.obsm["X_pca"] = rng.normal(size=(n_obs, 3)).astype(np.float32)
    return ad


def _arrays(collection, prefix=""):
    """(path in the experiment, SOMA object) of every array under ``collection``."""
    for name, member in collection.items():
        path = f"{prefix}{name}"
        if isinstance(member, (tiledbsoma.DataFrame, tiledbsoma.PointCloudDataFrame, tiledbsoma.SparseNDArray,
                               tiledbsoma.DenseNDArray)):
            yield path, member
        else:
            yield from _arrays(member, path + "/")


def _plain(values: list) -> list:
    """JSON's values: NaN as "nan", nested lists (a dense array's rows) likewise."""
    return [_plain(v) if isinstance(v, list) else "nan" if isinstance(v, float) and v != v else v for v in values]


def _read(obj) -> dict:
    if isinstance(obj, (tiledbsoma.DataFrame, tiledbsoma.PointCloudDataFrame)):
        table = obj.read().concat().sort_by("soma_joinid")
    elif isinstance(obj, tiledbsoma.SparseNDArray):
        table = obj.read().tables().concat()
        table = table.sort_by([(f"soma_dim_{i}", "ascending") for i in range(obj.ndim)])
    else:
        data = obj.read().to_numpy()
        return {"soma_data": _plain(data.tolist())}
    return {name: _plain(table[name].to_pylist()) for name in table.column_names}


def _extras(uri: str) -> None:
    """A collection of what an AnnData ingest does not write, each at fixed timestamps (ms 1-6): a dataframe
    indexed by a string and an integer, written twice over overlapping keys, with cells deleted by a
    condition and an enumeration extended; a dense 2-D array written in two overlapping slabs; a point
    cloud, whose dimensions are float64."""
    schema = pa.schema([("name", pa.large_string()), ("soma_joinid", pa.int64()), ("value", pa.float32()),
                        ("tag", pa.dictionary(pa.int8(), pa.large_string()))])
    points = pa.schema([("x", pa.float64()), ("y", pa.float64()), ("count", pa.int32())])
    with tiledbsoma.Collection.create(uri, tiledb_timestamp=1) as c:
        c.add_new_dataframe("by_name", schema=schema, index_column_names=("name", "soma_joinid"),
                            domain=(None, (0, 99)))
        c.add_new_dense_ndarray("dense", type=pa.float64(), shape=(6, 8))
        pc = tiledbsoma.PointCloudDataFrame.create(f"{uri}/points", schema=points, tiledb_timestamp=1,
                                                   domain=[(-10.0, 10.0), (0.0, 5.0), (0, 99)])
        c.set("points", pc, use_relative_uri=True)
        pc.close()
    for ts, rows in ((2, range(0, 20)), (3, range(10, 30))):
        table = pa.table({"name": [f"n{i:02}" for i in rows], "soma_joinid": list(rows),
                          "value": np.float32(np.array(list(rows)) / 30 + ts), "tag": pa.DictionaryArray.from_arrays(
                              pa.array([i % 2 for i in rows], pa.int8()), pa.array(["even", "odd"], pa.large_string()))})
        with tiledbsoma.DataFrame.open(f"{uri}/by_name", "w", tiledb_timestamp=ts) as df:
            df.write(table)
    with tiledbsoma.DataFrame.open(f"{uri}/by_name", "d", tiledb_timestamp=4) as df:
        df.delete_cells(value_filter="value < 2.2")
    with tiledbsoma.DataFrame.open(f"{uri}/by_name", "w", tiledb_timestamp=5) as df:
        df.extend_enumeration_values({"tag": pa.array(["none"], pa.large_string())})
    for ts, box, shape in ((2, (slice(0, 2), slice(None)), (3, 8)), (3, (slice(2, 5), slice(2, 4)), (4, 3))):
        with tiledbsoma.DenseNDArray.open(f"{uri}/dense", "w", tiledb_timestamp=ts) as d:
            d.write(box, pa.Tensor.from_numpy(np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + ts))
    with tiledbsoma.PointCloudDataFrame.open(f"{uri}/points", "w", tiledb_timestamp=6) as pc:
        pc.write(pa.table({"x": [-2.5, 0.0, 7.25, 1.0], "y": [0.5, 4.0, 1.5, 2.0], "soma_joinid": [0, 1, 2, 3],
                           "count": pa.array([3, 1, 4, 1], pa.int32())}))


def main(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    uri = str(out / "experiment")
    tiledbsoma.io.from_anndata(uri, _anndata(40, 1, ["B", "T", "NK"], 0), measurement_name="RNA")
    second = _anndata(20, 2, ["B", "T", "NK", "mono"], 40)
    plan = tiledbsoma.io.register_anndatas(uri, [second], measurement_name="RNA", obs_field_name="obs_id",
                                           var_field_name="var_id", append_obsm_varm=True)
    plan.prepare_experiment(uri)
    tiledbsoma.io.from_anndata(uri, second, measurement_name="RNA", registration_mapping=plan)
    with tiledbsoma.Experiment.open(uri) as exp:
        obs = exp.obs.read().concat().to_pandas().set_index("obs_id").drop(columns=["soma_joinid", "donor"])
    with tiledbsoma.Experiment.open(uri, "w") as exp:  # columns dropped and added: the schema evolves
        obs["n_genes"] = obs["n_genes"].astype("Int32")  # pandas read it back as float64, with NaN
        obs["quality"] = np.linspace(0, 1, len(obs))
        obs["batch"] = pd.Categorical(["first"] * 40 + ["second"] * 20)
        tiledbsoma.io.update_obs(exp, obs)
    _extras(str(out / "extras"))
    truth = {"tiledbsoma_version": tiledbsoma.__version__, "arrays": {}}
    for name, kind in (("experiment", tiledbsoma.Experiment), ("extras", tiledbsoma.Collection)):
        with kind.open(str(out / name)) as top:
            for path, obj in _arrays(top, name + "/"):
                truth["arrays"][path] = {"uri": str(Path(obj.uri.removeprefix("file://")).relative_to(out)),
                                         "soma_object_type": obj.metadata.get("soma_object_type"),
                                         "read": _read(obj)}
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(out, len(truth["arrays"]), "arrays")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/data/soma")
