package crashtest

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// PostgresOutputs reads a PostgreSQL sink's table in insertion order (its
// seq column), with the coordinates of each row.
func PostgresOutputs(ctx context.Context, conn *pgx.Conn, table string) ([]Out, error) {
	rows, err := conn.Query(ctx, `SELECT seq, topic, partition, "offset", value::text, late FROM `+table+` ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var outs []Out
	for rows.Next() {
		var (
			seq, off  int64
			topic     string
			partition int32
			value     string
			late      bool
		)
		if err := rows.Scan(&seq, &topic, &partition, &off, &value, &late); err != nil {
			return nil, err
		}
		o, err := ParseEnvelope([]byte(value), "seq "+strconv.FormatInt(seq, 10))
		if err != nil {
			return nil, err
		}
		o.HasCoords, o.Topic, o.Partition, o.Offset, o.Late = true, topic, partition, off, late
		outs = append(outs, o)
	}
	return outs, rows.Err()
}

// ParseValues parses values read back from a sink (Kafka values, bulk
// documents), named where+index in messages.
func ParseValues(vals [][]byte, where string) ([]Out, error) {
	outs := make([]Out, 0, len(vals))
	for i, v := range vals {
		o, err := ParseEnvelope(v, where+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}
