"""The pure Avro <-> Spark type mapping of typed columns (no JVM, no broker)."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T
from streamwire.exceptions import SchemaError
from streamwire.spark._typed import avro_from_spark, check_fits, spark_struct

NESTED = {
    "type": "record",
    "name": "Outer",
    "namespace": "acme",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "inner", "type": {"type": "record", "name": "In", "fields": [
            {"name": "a", "type": ["null", "int"], "default": None},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
        ]}},
        {"name": "again", "type": ["null", "acme.In"]},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 4}},
        {"name": "xs", "type": {"type": "array", "items": "E"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "double"]}},
    ],
}  # fmt: skip


def test_nested_record_maps_to_spark_types() -> None:
    st = spark_struct(NESTED)
    got = {f.name: f.dataType.simpleString() for f in st.fields}
    assert got == {
        "id": "bigint",
        "inner": "struct<a:int,e:string>",
        "again": "struct<a:int,e:string>",
        "ts": "timestamp",
        "fx": "binary",
        "xs": "array<string>",
        "m": "map<string,double>",
    }
    assert all(f.nullable for f in st.fields)


def test_records_that_contain_themselves_and_real_unions_are_refused() -> None:
    node = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"]}],
    }
    with pytest.raises(SchemaError, match="contains itself"):
        spark_struct(node)
    union = {"type": "record", "name": "U", "fields": [{"name": "u", "type": ["int", "string"]}]}
    with pytest.raises(SchemaError, match="union"):
        spark_struct(union)


def test_spark_schema_derives_an_avro_record_that_maps_back() -> None:
    fields = T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("name", T.StringType(), True),
            T.StructField("st", T.StructType([T.StructField("b", T.BooleanType())]), True),
            T.StructField("xs", T.ArrayType(T.IntegerType(), False), True),
            T.StructField("m", T.MapType(T.StringType(), T.FloatType()), True),
            T.StructField("at", T.TimestampType(), True),
            T.StructField("day", T.DateType(), True),
            T.StructField("small", T.ShortType(), True),
        ]
    ).fields
    d = avro_from_spark(fields, "Rec", "acme")
    assert d["name"] == "Rec" and d["namespace"] == "acme"
    assert d["fields"][0] == {"name": "id", "type": "long"}
    assert d["fields"][1] == {"name": "name", "type": ["null", "string"], "default": None}
    assert d["fields"][2]["type"][1]["name"] == "Rec_st"
    assert d["fields"][5]["type"][1] == {"type": "long", "logicalType": "timestamp-micros"}
    back = {f.name: f.dataType.simpleString() for f in spark_struct(d).fields}
    assert back == {
        "id": "bigint",
        "name": "string",
        "st": "struct<b:boolean>",
        "xs": "array<int>",
        "m": "map<string,float>",
        "at": "timestamp",
        "day": "date",
        "small": "int",
    }
    check_fits(fields, d)  # a DataFrame fits the schema derived from it
    with pytest.raises(SchemaError, match="no Avro type"):
        avro_from_spark([T.StructField("p", T.DecimalType(10, 2))])


def test_check_fits_names_the_misfit() -> None:
    f = T.StructField
    with pytest.raises(SchemaError, match=r"Outer\.inner\.e is int"):
        check_fits(
            [
                f("id", T.LongType()),
                f("inner", T.StructType([f("e", T.IntegerType())])),
                f("ts", T.LongType()),
                f("fx", T.BinaryType()),
                f("xs", T.ArrayType(T.StringType())),
                f("m", T.MapType(T.StringType(), T.DoubleType())),
            ],
            NESTED,
        )
    with pytest.raises(SchemaError, match=r"no column Outer\.inner,"):
        check_fits([f("id", T.LongType())], NESTED)
