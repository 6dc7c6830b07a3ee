"""The Spark traffic pipeline over pyzenoh recordings (needs the ``spark`` extra).

* :mod:`.source` - the ``pyzenoh`` Python data source (batch + streaming reads, and the
  Zenoh-publishing sink from :mod:`.sink`);
* :mod:`.rows` - recorded messages -> typed rows / Arrow batches (the codec lives here);
* :mod:`.columnar`, :mod:`.push_vector`, :mod:`.gather` - the source's column-at-a-time
  decoding of ``messages``;
* :mod:`.export` - ``export_table``: a recording table to Parquet, written by the Spark
  tasks with pyarrow (the pipeline's way to write ``messages``);
* :mod:`.jobs` - ``run_pipeline``: Parquet tables and the routing audit;
* :mod:`.report` - ``report.html``;
* :mod:`.synth` - synthetic, router-consistent recordings.

Nothing here is imported by ``import pyzenoh.pipeline``: pyspark stays optional.
"""
