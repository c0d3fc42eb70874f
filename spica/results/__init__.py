"""What a search leaves in its results folder: the ledger, tables, plots, report page and the
deploy folders; and `spica compare` over several. Import the submodules directly: the folder is
written by a process of its own (writer.py), and reading a saved one needs no search."""
