//! CSV and JSON-lines exports: exact columns on a small example.

use ldplayer_dns::Rcode;
use ldplayer_results::{
    export_csv, export_jsonl, CsvWriter, ErrorKind, Outcome, QueryResult, ResultSink,
    ResultsReader, ResultsWriter, COLUMNS,
};
use ldplayer_trace::Proto;

fn examples() -> Vec<QueryResult> {
    vec![
        QueryResult {
            index: 0,
            trace_ns: 1_000_000_000,
            intended_ns: 5_000_000_000,
            sent_ns: 5_000_000_250,
            received_ns: 5_000_400_250,
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: Rcode::NXDOMAIN,
            response_len: 120,
            truncated: true,
            outcome: Outcome::Answered,
            target: 0,
        },
        QueryResult {
            index: 1,
            trace_ns: 1_000_000_100,
            intended_ns: 5_000_000_100,
            sent_ns: 5_000_000_050,
            received_ns: 0,
            proto: Proto::Tcp,
            new_connection: true,
            handshake_ns: 35_000,
            rcode: Rcode::NOERROR,
            response_len: 0,
            truncated: false,
            outcome: Outcome::Timeout,
            target: 0,
        },
        QueryResult {
            index: 2,
            trace_ns: 1_000_000_200,
            intended_ns: 5_000_000_200,
            sent_ns: 0,
            received_ns: 0,
            proto: Proto::Tls,
            new_connection: false,
            handshake_ns: 0,
            rcode: Rcode::NOERROR,
            response_len: 0,
            truncated: false,
            outcome: Outcome::Error(ErrorKind::BadQuery),
            target: 0,
        },
        QueryResult {
            index: 3,
            trace_ns: 1_000_000_300,
            intended_ns: 5_000_000_300,
            sent_ns: 5_000_000_300,
            received_ns: 5_000_001_300,
            proto: Proto::Https,
            new_connection: false,
            handshake_ns: 0,
            rcode: Rcode(4000),
            response_len: 512,
            truncated: false,
            outcome: Outcome::Answered,
            target: 2,
        },
    ]
}

fn results_file() -> Vec<u8> {
    let mut w = ResultsWriter::new(Vec::new()).unwrap();
    for r in examples() {
        w.result(&r).unwrap();
    }
    w.into_inner().unwrap()
}

#[test]
fn csv_columns_exact() {
    let file = results_file();
    let mut out = Vec::new();
    let n = export_csv(ResultsReader::new(&file[..]).unwrap(), &mut out).unwrap();
    assert_eq!(n, 4);
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "index,trace_ns,intended_ns,sent_ns,received_ns,latency_ns,timing_error_ns,proto,\
new_connection,rcode,rcode_name,response_len,truncated,outcome,handshake_ns,target\n\
0,1000000000,5000000000,5000000250,5000400250,400000,250,udp,0,3,NXDOMAIN,120,1,answered,,0\n\
1,1000000100,5000000100,5000000050,0,,-50,tcp,1,,,0,0,timeout,35000,0\n\
2,1000000200,5000000200,0,0,,,tls,0,,,0,0,bad-query,,0\n\
3,1000000300,5000000300,5000000300,5000001300,1000,0,https,0,4000,RCODE4000,512,0,answered,,2\n"
    );
    assert_eq!(text.lines().next().unwrap(), COLUMNS.join(","));
}

#[test]
fn jsonl_keys_exact() {
    let file = results_file();
    let mut out = Vec::new();
    let n = export_jsonl(ResultsReader::new(&file[..]).unwrap(), &mut out).unwrap();
    assert_eq!(n, 4);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[0],
        r#"{"index":0,"trace_ns":1000000000,"intended_ns":5000000000,"sent_ns":5000000250,"received_ns":5000400250,"latency_ns":400000,"timing_error_ns":250,"proto":"udp","new_connection":false,"rcode":3,"rcode_name":"NXDOMAIN","response_len":120,"truncated":true,"outcome":"answered","handshake_ns":null,"target":0}"#
    );
    assert_eq!(
        lines[1],
        r#"{"index":1,"trace_ns":1000000100,"intended_ns":5000000100,"sent_ns":5000000050,"received_ns":0,"latency_ns":null,"timing_error_ns":-50,"proto":"tcp","new_connection":true,"rcode":null,"rcode_name":null,"response_len":0,"truncated":false,"outcome":"timeout","handshake_ns":35000,"target":0}"#
    );
    assert_eq!(
        lines[2],
        r#"{"index":2,"trace_ns":1000000200,"intended_ns":5000000200,"sent_ns":0,"received_ns":0,"latency_ns":null,"timing_error_ns":null,"proto":"tls","new_connection":false,"rcode":null,"rcode_name":null,"response_len":0,"truncated":false,"outcome":"bad-query","handshake_ns":null,"target":0}"#
    );
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        let mut want: Vec<&str> = COLUMNS.to_vec();
        want.sort();
        let mut got: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
        got.sort();
        assert_eq!(got, want);
    }
}

#[test]
fn export_from_any_iterator_and_sink() {
    let mut out = Vec::new();
    let n = export_csv(examples().into_iter().map(Ok), &mut out).unwrap();
    assert_eq!(n, 4);
    let mut sink = CsvWriter::new(Vec::new()).unwrap();
    for r in examples() {
        sink.result(&r).unwrap();
    }
    sink.finish().unwrap();
    assert_eq!(sink.into_inner().unwrap(), out);
}

#[test]
fn export_stops_at_an_error() {
    let items = vec![
        Ok(examples()[0]),
        Err(ldplayer_results::ResultsError::Format("boom".into())),
        Ok(examples()[1]),
    ];
    let mut out = Vec::new();
    assert!(export_jsonl(items, &mut out).is_err());
}
