"""Tables as data frames: the EDM/Arrow type map (``types``), JSON pages to record batches
(``decode``), frames back to entities (``encode``), reads and writes against a table
(``io``), Parquet files (``parquet``) and Dask (``dask``). Needs ``pyarrow``
(``pip install "azt-tables[arrow]"``); the public face is :mod:`azt.frames`."""
